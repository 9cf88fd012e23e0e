import { Hono } from "hono";
import { ActRequest, HarnessSError, UpdateRequest, createRng, formatIssues, type Policy } from "@harness-s/core";

/**
 * The policy endpoint over HTTP (protocol in core's `policy-protocol.ts`), serving policies made
 * by `create` — the embedded CPU policy here, a GPU model in a managed endpoint. Versions only
 * move by updates; an act or update against another version is 409.
 *
 * @example
 * serve({ fetch: createPolicyServer(() => new LogLinearPolicy()).fetch, port: 8700 });
 */
export function createPolicyServer(create: (policyId: string) => Policy): Hono {
  const policies = new Map<string, Policy>();
  const state = (id: string, p: Policy) => ({ policyId: id, version: p.version() });
  const find = (id: string) => policies.get(id);
  const bad = (issues: string[]) => ({ error: { code: "VALIDATION_FAILED", issues } });

  return new Hono()
    .put("/v1/policies/:id", (c) => {
      const id = c.req.param("id");
      if (!policies.has(id)) policies.set(id, create(id));
      return c.json(state(id, policies.get(id)!));
    })
    .get("/v1/policies/:id", (c) => {
      const p = find(c.req.param("id"));
      return p ? c.json(state(c.req.param("id"), p)) : c.json({ error: { code: "NOT_FOUND" } }, 404);
    })
    .delete("/v1/policies/:id", (c) => c.json({ deleted: policies.delete(c.req.param("id")) }))
    .post("/v1/policies/:id/act", async (c) => {
      const p = find(c.req.param("id"));
      if (!p) return c.json({ error: { code: "NOT_FOUND" } }, 404);
      const req = ActRequest.safeParse(await c.req.json().catch(() => undefined));
      if (!req.success) return c.json(bad(formatIssues(req.error.issues)), 400);
      if (req.data.version !== undefined && req.data.version !== p.version()) return c.json({ error: { code: "STALE_POLICY_VERSION", message: `asked for ${req.data.version}, current is ${p.version()}` } }, 409);
      const choice = await p.act(req.data.observation, createRng(req.data.seed));
      return c.json({ ...choice, version: p.version() });
    })
    .post("/v1/policies/:id/update", async (c) => {
      const p = find(c.req.param("id"));
      if (!p) return c.json({ error: { code: "NOT_FOUND" } }, 404);
      const req = UpdateRequest.safeParse(await c.req.json().catch(() => undefined));
      if (!req.success) return c.json(bad(formatIssues(req.error.issues)), 400);
      if (req.data.baseVersion !== p.version()) return c.json({ error: { code: "STALE_POLICY_VERSION", message: `update based on ${req.data.baseVersion}, current is ${p.version()}` } }, 409);
      return c.json(await p.update(req.data));
    })
    .onError((err, c) => c.json({ error: { code: err instanceof HarnessSError ? err.code : "INTERNAL", message: err.message } }, 500));
}
