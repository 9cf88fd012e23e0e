import { createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { EvidenceReport } from "@harness-s/core/messaging";
import { Profile, reportEvidence } from "@harness-s/core/profile";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, addUsage, idParam, parseBody, requireScope } from "../http.ts";
import { bodyErrors, errors, jsonBody, jsonOf, notFound, queryId } from "../openapi-parts.ts";

const EvidenceQueued = z.object({ queued: z.number().int() });
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
    responses: { 202: jsonOf("queued: how many outcomes", EvidenceQueued), ...notFound("pool"), ...errors, ...bodyErrors },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listProfiles",
    tags: ["profiles"],
    summary: "Behaviour profiles of a pool's harnesses",
    parameters: [queryId("poolId", "the pool whose harnesses' profiles to list")],
    responses: { 200: jsonOf("profiles by harness id", PoolProfiles), ...errors },
  }),
};

export const profilesApp = (deps: ApiDeps) =>
  apiRouter()
    .openapi(profileRoutes.evidence, async (c) => {
      const key = await requireScope(c, "profiles:write", deps);
      const queued = await reportEvidence(await parseBody(c, EvidenceReport, deps.maxBodyBytes, deps.bodyTimeouts), deps, { keyId: key.id });
      addUsage(c, { rollouts: queued.queued });
      return c.json(queued, 202);
    })
    .openapi(profileRoutes.list, async (c) => {
      await requireScope(c, "profiles:read", deps);
      const poolId = idParam(c, "poolId", c.req.query("poolId"));
      return c.json({ poolId, profiles: await deps.profiles.get(poolId) }, 200);
    });
