import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { ZodMediaTypeObject } from "@asteasolutions/zod-to-openapi";
import type { Env } from "hono";
import { z } from "zod";
import { EvidenceReport, ExperimentRequest, HarnessPool, RescueRequest, RescueStatus, RouteRequest, RoutingDecision } from "@harness-s/core";

/*
 * Every operation of the API, declared once: the app registers its handlers on these routes
 * (`app.openapi(route, handler)`) and the OpenAPI document is generated from them. Bodies are
 * documented with the zod types' JSON Schema but parsed by the handlers' own `parseBody` (size,
 * depth and streaming limits), so no validator is attached here.
 */

/** A request body documented by its zod type's JSON Schema (a plain schema object: no validator is attached). */
const jsonBody = (schema: z.ZodType) => ({
  required: true,
  content: { "application/json": { schema: z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as ZodMediaTypeObject["schema"] } },
});
const AnyObject = z.looseObject({});
/** A JSON response of a zod type (typed handlers are checked against it); any object when none is given. */
function jsonOf(description: string): { description: string; content: { "application/json": { schema: typeof AnyObject } } };
function jsonOf<S extends z.ZodType>(description: string, schema: S): { description: string; content: { "application/json": { schema: S } } };
function jsonOf(description: string, schema: z.ZodType = AnyObject) {
  return { description, content: { "application/json": { schema } } };
}

const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string(), issues: z.array(z.string()).optional() }) });
const error = (description: string) => jsonOf(description, ErrorBody);
const errors = {
  400: error("malformed, oversized or invalid body or parameter (issues name each bad field)"),
  401: error("missing or unknown API key"),
  403: error("the key lacks the scope"),
  413: error("body larger than the endpoint accepts"),
  414: error("URL longer than 4096 characters"),
  429: error("the key's quota is used up, or (experiments) it already has its limit of runs queued or running"),
  503: error("a backing store or queue is unavailable (retry); PARTIAL_SEND lists the messages that were and were not queued"),
};
/** What only an endpoint that reads a body answers. */
const bodyErrors = {
  408: error("the body stalled (5 s without a byte) or took longer than 15 s in all"),
  415: error("the body was not sent as application/json (UTF-8)"),
};
const idParam = (name = "id") => ({ name, in: "path" as const, required: true, schema: { type: "string" as const } });
const notFound = (what: string) => ({ 404: error(`no such ${what}`) });

/** Routes by the prefix the app mounts them under (`app.route(prefix, …)`), paths relative to it. */
export const ROUTES = {
  "/v1/route": {
    route: createRoute({
      method: "post",
      path: "/",
      operationId: "routeTask",
      tags: ["router"],
      summary: "Rank a pool's harnesses for a task (rescue Top-k, or Rank-1 without failure tags)",
      request: { body: jsonBody(RouteRequest) },
      responses: { 200: jsonOf("the decision, with each voter's ballot", RoutingDecision), ...notFound("pool"), ...errors, ...bodyErrors },
    }),
  },
  "/v1/pools": {
    create: createRoute({
      method: "post",
      path: "/",
      operationId: "createPool",
      tags: ["pools"],
      summary: "Register an immutable harness pool",
      request: { body: jsonBody(HarnessPool) },
      responses: { 201: jsonOf("created: id and content version"), 409: error("a different pool exists under this id"), ...errors, ...bodyErrors },
    }),
    list: createRoute({
      method: "get",
      path: "/",
      operationId: "listPools",
      tags: ["pools"],
      summary: "List pools",
      responses: { 200: jsonOf("pools: id, version, number of siblings"), ...errors },
    }),
    get: createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getPool",
      tags: ["pools"],
      summary: "Get a pool",
      parameters: [idParam()],
      responses: { 200: jsonOf("the pool", HarnessPool), ...notFound("pool"), ...errors },
    }),
  },
  "/v1/profiles": {
    evidence: createRoute({
      method: "post",
      path: "/evidence",
      operationId: "reportEvidence",
      tags: ["profiles"],
      summary: "Report outcomes observed by an external trainer (queued, applied once per outcome id)",
      request: { body: jsonBody(EvidenceReport) },
      responses: { 202: jsonOf("queued: how many outcomes"), ...notFound("pool"), ...errors, ...bodyErrors },
    }),
    list: createRoute({
      method: "get",
      path: "/",
      operationId: "listProfiles",
      tags: ["profiles"],
      summary: "Behaviour profiles of a pool's harnesses",
      parameters: [{ name: "poolId", in: "query", required: true, schema: { type: "string" } }],
      responses: { 200: jsonOf("profiles by harness id"), ...errors },
    }),
  },
  "/v1/decisions": {
    get: createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getDecision",
      tags: ["router"],
      summary: "A recorded routing decision (only the key that asked may read it)",
      parameters: [idParam()],
      responses: { 200: jsonOf("the decision", RoutingDecision), ...notFound("decision"), ...errors },
    }),
  },
  "/v1/rescues": {
    start: createRoute({
      method: "post",
      path: "/",
      operationId: "startRescue",
      tags: ["rescues"],
      summary: "Start an elastic rescue: route the failed task, fan its rollouts out to the dispatch workers",
      request: { body: jsonBody(RescueRequest) },
      responses: {
        202: jsonOf("accepted: id, chosen harnesses, expected rollouts"),
        ...notFound("pool or task"),
        501: error("this deployment has no dispatch worker"),
        ...errors,
        ...bodyErrors,
      },
    }),
    get: createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getRescue",
      tags: ["rescues"],
      summary: "Status, rewards and per-rollout outcomes of a rescue",
      parameters: [idParam()],
      responses: { 200: jsonOf("status (failed: every slot is stored or in the DLQ, and some are in the DLQ)", RescueStatus), ...notFound("rescue"), ...errors },
    }),
  },
  "/v1/experiments": {
    start: createRoute({
      method: "post",
      path: "/",
      operationId: "startExperiment",
      tags: ["experiments"],
      summary: "Start a paired experiment (arms × seeds) with a rollout budget cap; the coordinator runs it",
      request: { body: jsonBody(ExperimentRequest) },
      responses: { 202: jsonOf("accepted: id, status, progress, cost so far"), ...errors, ...bodyErrors },
    }),
    get: createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getExperiment",
      tags: ["experiments"],
      summary: "Status, progress, usage and cost so far (stopped = budget cap reached)",
      parameters: [idParam()],
      responses: { 200: jsonOf("status"), ...notFound("experiment for this key"), ...errors },
    }),
    cancel: createRoute({
      method: "post",
      path: "/{id}/cancel",
      operationId: "cancelExperiment",
      tags: ["experiments"],
      summary: "Cancel a run: a queued one ends at once, a running one after its current step; finished units are kept",
      parameters: [idParam()],
      responses: { 200: jsonOf("status after the request"), ...notFound("experiment for this key"), ...errors },
    }),
    steps: createRoute({
      method: "get",
      path: "/{id}/steps",
      operationId: "listExperimentSteps",
      tags: ["experiments"],
      summary: "Each training step of the run (optionally ?arm=&seed=): rollouts so far and every group's outcome with the harnesses chosen",
      parameters: [
        idParam(),
        { name: "arm", in: "query", required: false, schema: { type: "string" } },
        { name: "seed", in: "query", required: false, schema: { type: "integer", minimum: 0 } },
      ],
      responses: { 200: jsonOf("steps"), ...notFound("experiment for this key"), ...errors },
    }),
    metrics: createRoute({
      method: "get",
      path: "/{id}/metrics",
      operationId: "getExperimentMetrics",
      tags: ["experiments"],
      summary: "Per (arm, seed) results so far, and the summary once done",
      parameters: [idParam()],
      responses: { 200: jsonOf("metrics"), ...notFound("experiment for this key"), ...errors },
    }),
  },
  "": {
    usage: createRoute({
      method: "get",
      path: "/v1/usage",
      operationId: "getUsage",
      tags: ["account"],
      summary: "This key's metered usage (requests, ballots, rollouts, LLM tokens, compute) and quota; reading it is not metered",
      responses: { 200: jsonOf("usage"), 401: errors[401], 503: errors[503] },
    }),
    health: createRoute({
      method: "get",
      path: "/health",
      operationId: "health",
      tags: ["account"],
      summary: "Liveness (no key needed)",
      security: [],
      responses: { 200: jsonOf("ok"), 414: errors[414] },
    }),
    openapi: createRoute({
      method: "get",
      path: "/openapi.json",
      operationId: "getOpenApiDocument",
      tags: ["account"],
      summary: "This document (no key needed)",
      security: [],
      responses: { 200: jsonOf("the OpenAPI 3.1 document"), 414: errors[414] },
    }),
  },
} as const;

export const DEFAULT_SERVERS = [{ url: "http://127.0.0.1:18787", description: "harness-s serve (local stand-ins)" }];

/** The document's top-level fields: info, servers, the bearer scheme every operation but two needs. */
export function documentConfig(servers: { url: string; description?: string }[] = DEFAULT_SERVERS) {
  return {
    openapi: "3.1.0",
    info: {
      title: "Harness-S router API",
      version: "1",
      description: "Route tasks to sibling harnesses, manage pools and profiles, run elastic rescues and paired experiments.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers,
    security: [{ bearer: [] }],
    tags: [
      { name: "router", description: "Routing decisions" },
      { name: "pools", description: "Immutable, content-versioned harness pools" },
      { name: "profiles", description: "Harness behaviour profiles and the evidence that updates them" },
      { name: "rescues", description: "Elastic rescue rollouts" },
      { name: "experiments", description: "Paired experiments run by the coordinator" },
      { name: "account", description: "Usage, liveness, this document" },
    ],
  };
}

/** Adds the bearer scheme the document's `security` names (the generator writes only what is registered). */
export function registerSecurity<E extends Env>(app: OpenAPIHono<E>) {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
}
