import { z } from "zod";
import { EvidenceReport, ExperimentRequest, HarnessPool, RescueRequest, RescueStatus, RouteRequest, RoutingDecision } from "@harness-s/core";

const errorSchema = {
  type: "object",
  properties: { error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" }, issues: { type: "array", items: { type: "string" } } } } },
};
const errors = Object.fromEntries(
  [
    ["400", "malformed, oversized or invalid body (issues name each bad field)"],
    ["401", "missing or unknown API key"],
    ["403", "the key lacks the scope"],
    ["413", "body larger than the endpoint accepts"],
    ["414", "URL longer than 4096 characters"],
    ["429", "the key's quota is used up, or (experiments) it already has its limit of runs queued or running"],
    ["503", "a backing store or queue is unavailable (retry); PARTIAL_SEND lists the messages that were and were not queued"],
  ].map(([code, description]) => [code, { description, content: { "application/json": { schema: errorSchema } } }]),
);
const json = (schema: z.ZodType) => ({ "application/json": { schema: z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) } });

/** The OpenAPI 3.1 document served at /openapi.json, with schemas generated from the zod types. */
export function openApiDocument() {
  return {
    openapi: "3.1.0",
    info: { title: "Harness-S router API", version: "1" },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    security: [{ bearer: [] }],
    paths: {
      "/v1/route": {
        post: {
          summary: "Rank a pool's harnesses for a task (rescue Top-k, or Rank-1 without failure tags)",
          requestBody: { required: true, content: json(RouteRequest) },
          responses: { "200": { description: "the decision, with each voter's ballot", content: json(RoutingDecision) }, ...errors },
        },
      },
      "/v1/pools": {
        post: { summary: "Register an immutable harness pool", requestBody: { required: true, content: json(HarnessPool) }, responses: { "201": { description: "created" }, "409": { description: "a different pool exists under this id" }, ...errors } },
        get: { summary: "List pools", responses: { "200": { description: "pools" }, ...errors } },
      },
      "/v1/pools/{id}": { get: { summary: "Get a pool", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "the pool", content: json(HarnessPool) }, "404": { description: "no such pool" }, ...errors } } },
      "/v1/usage": { get: { summary: "This key's metered usage (requests, ballots, rollouts, LLM tokens, compute) and quota; reading it is not metered", responses: { "200": { description: "usage" }, "401": errors["401"] } } },
      "/v1/rescues": {
        post: { summary: "Start an elastic rescue: route the failed task, fan its rollouts out to the dispatch workers", requestBody: { required: true, content: json(RescueRequest) }, responses: { "202": { description: "accepted: id, chosen harnesses, expected rollouts" }, "404": { description: "no such pool or task" }, ...errors } },
      },
      "/v1/rescues/{id}": {
        get: { summary: "Status, rewards and per-rollout outcomes of a rescue", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "status (failed: every slot is stored or in the DLQ, and some are in the DLQ)", content: json(RescueStatus) }, "404": { description: "no such rescue" }, ...errors } },
      },
      "/v1/profiles/evidence": {
        post: { summary: "Report outcomes observed by an external trainer (queued, applied once per outcome id)", requestBody: { required: true, content: json(EvidenceReport) }, responses: { "202": { description: "queued" }, "404": { description: "no such pool" }, ...errors } },
      },
      "/v1/profiles": { get: { summary: "Behaviour profiles of a pool's harnesses", parameters: [{ name: "poolId", in: "query", required: true, schema: { type: "string" } }], responses: { "200": { description: "profiles by harness id" }, ...errors } } },
      "/v1/experiments": {
        post: { summary: "Start a paired experiment (arms × seeds) with a rollout budget cap; the coordinator runs it", requestBody: { required: true, content: json(ExperimentRequest) }, responses: { "202": { description: "accepted: id, status, progress, cost so far" }, ...errors } },
      },
      "/v1/experiments/{id}": { get: { summary: "Status, progress, usage and cost so far (stopped = budget cap reached)", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "status" }, "404": { description: "no such experiment for this key" }, ...errors } } },
      "/v1/experiments/{id}/cancel": { post: { summary: "Cancel a run: a queued one ends at once, a running one after its current step; finished units are kept", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "status after the request" }, "404": { description: "no such experiment for this key" }, ...errors } } },
      "/v1/experiments/{id}/steps": { get: { summary: "Each training step of the run (optionally ?arm=&seed=): rollouts so far and every group's outcome (used, replaced by a rescue, resampled, dropped) with the harnesses chosen", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }, { name: "arm", in: "query", required: false, schema: { type: "string" } }, { name: "seed", in: "query", required: false, schema: { type: "integer" } }], responses: { "200": { description: "steps" }, "404": { description: "no such experiment for this key" }, ...errors } } },
      "/v1/experiments/{id}/metrics": { get: { summary: "Per (arm, seed) results so far, and the summary once done", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "metrics" }, "404": { description: "no such experiment for this key" }, ...errors } } },
      "/v1/decisions/{id}": { get: { summary: "A recorded routing decision", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { "200": { description: "the decision" }, "404": { description: "no such decision" }, ...errors } } },
    },
  };
}
