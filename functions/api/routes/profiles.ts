import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { Id } from "@harness-s/core";
import { EvidenceReport } from "@harness-s/core/profile";
import { Profile, reportEvidence } from "@harness-s/core/profile";
import { poolVisibleTo, poolsVisibleTo } from "@harness-s/core/pools";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { usageOf } from "../middleware/metering.ts";
import { readOrWrite, requireScope } from "../middleware/scope.ts";
import { bodyErrors, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";

const EvidenceQueued = z.object({ queued: z.number().int() });
const ProfilesQuery = z.object({ poolId: Id.meta({ description: "the pool whose harnesses' profiles to list" }) });
const PoolProfiles = z.object({ poolId: z.string(), profiles: z.record(z.string(), Profile) });

/** `/v1/profiles`: harness behaviour profiles and the evidence that updates them. */
export const profileRoutes = {
  evidence: createRoute({
    method: "post",
    path: "/evidence",
    operationId: "reportEvidence",
    tags: ["profiles"],
    summary: "Report outcomes observed by an external trainer (queued, applied once per outcome id)",
    request: { body: jsonBody(EvidenceReport) },
    responses: {
      202: jsonOf("queued: how many outcomes", EvidenceQueued),
      ...notFound("pool"),
      ...errors,
      ...bodyErrors,
    },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listProfiles",
    tags: ["profiles"],
    summary: "Behaviour profiles of a pool's harnesses",
    request: { query: ProfilesQuery },
    responses: { 200: jsonOf("profiles by harness id", PoolProfiles), ...errors },
  }),
};

export const profilesApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, readOrWrite("profiles:read", "profiles:write"))))
    .openapi(withMiddleware(profileRoutes.evidence, readBody(deps, EvidenceReport)), async (c) => {
      const queued = await reportEvidence(
        c.var.body,
        { ...deps, pools: poolsVisibleTo(deps.pools, c.var.key) },
        { keyId: c.var.key.id },
        usageOf(c),
      );
      return c.json(queued, 202);
    })
    .openapi(profileRoutes.list, async (c) => {
      const { poolId } = c.req.valid("query");
      // Another key's evolved pool has no profiles for this key (as though it did not exist).
      const pool = await deps.pools.get(poolId);
      const hidden = pool !== undefined && !poolVisibleTo(pool.owner, c.var.key);
      return c.json({ poolId, profiles: hidden ? {} : await deps.profiles.get(poolId) }, 200);
    });
