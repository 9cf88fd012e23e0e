import { Hono } from "hono";
import { ActRequest, UpdateRequest } from "@harness-s/core/protocol";
import { NotFoundError, createRng, formatIssues, ValidationError, type Policy } from "@harness-s/core";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { errorResponse } from "../api/http.ts";

/**
 * The policy endpoint over HTTP (protocol v1, core's `policy-protocol.ts`), serving policies made
 * by `create` — the embedded CPU policy here, a GPU model in a managed endpoint. Versions only
 * move by updates; an act or update against another version is 409 `STALE_POLICY_VERSION`.
 * Errors are answered by the API's one `errorResponse`.
 *
 * @example
 * serve({ fetch: createPolicyServer(() => new LogLinearPolicy()).fetch, port: 8700 });
 */
export function createPolicyServer(create: (policyId: string) => Policy): Hono {
  const policies = new Map<string, Policy>();
  const state = (id: string, p: Policy) => ({ policyId: id, version: p.version() });
  const find = (id: string) => {
    const p = policies.get(id);
    if (!p) throw new NotFoundError("policy", id);
    return p;
  };
  const body = async <T>(
    schema: {
      safeParse(
        x: unknown,
      ): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
    },
    json: Promise<unknown>,
    what: string,
  ): Promise<T> => {
    const parsed = schema.safeParse(await json.catch(() => undefined));
    if (!parsed.success) throw new ValidationError(what, formatIssues(parsed.error.issues));
    return parsed.data;
  };

  return new Hono()
    .put("/v1/policies/:id", (c) => {
      const id = c.req.param("id");
      if (!policies.has(id)) policies.set(id, create(id));
      return c.json(state(id, policies.get(id)!));
    })
    .get("/v1/policies/:id", (c) => c.json(state(c.req.param("id"), find(c.req.param("id")))))
    .delete("/v1/policies/:id", (c) => c.json({ deleted: policies.delete(c.req.param("id")) }))
    .post("/v1/policies/:id/act", async (c) => {
      const p = find(c.req.param("id"));
      const req = await body(ActRequest, c.req.json(), "act request");
      if (req.version !== undefined && req.version !== p.version())
        throw new StalePolicyVersionError(
          p.version(),
          req.version,
          `asked for ${req.version}, current is ${p.version()}`,
        );
      const choice = await p.act(req.observation, createRng(req.seed));
      return c.json({ ...choice, version: p.version() });
    })
    .post("/v1/policies/:id/update", async (c) => {
      const p = find(c.req.param("id"));
      const req = await body(UpdateRequest, c.req.json(), "update request");
      if (req.baseVersion !== p.version())
        throw new StalePolicyVersionError(
          p.version(),
          req.baseVersion,
          `update based on ${req.baseVersion}, current is ${p.version()}`,
        );
      return c.json(await p.update(req));
    })
    .onError(errorResponse);
}
