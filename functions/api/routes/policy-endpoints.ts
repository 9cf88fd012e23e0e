import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import {
  PolicyEndpointView,
  RegisterPolicyEndpoint,
  endpointView,
  ownEndpoint,
  registerPolicyEndpoint,
} from "@harness-s/core/callers";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { requireScope } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";

/** `/v1/policy-endpoints`: the policies a key's rescues sample from (its own endpoints, probed when registered). */
export const policyEndpointRoutes = {
  register: createRoute({
    method: "post",
    path: "/",
    operationId: "registerPolicyEndpoint",
    tags: ["rescues"],
    summary:
      "Register (or replace) a policy endpoint of yours: protocol v2, a vLLM or SGLang server, or OpenAI-compatible chat completions returning token ids and log-probabilities",
    description:
      "The URL is checked (http or https; no address in a loopback, private, link-local, CGNAT, multicast or unspecified range, in any spelling) and the endpoint probed before it is stored: a vllm, sglang or openai-chat endpoint samples one token in the token mode asked for (`mode`), or in each of its kind's in order (tokens in first), and the mode found is recorded (`probe.mode`). The secret header is stored, never returned or logged.",
    request: { body: jsonBody(RegisterPolicyEndpoint) },
    responses: {
      201: jsonOf("the registration (the secret header by name only)", PolicyEndpointView),
      ...errors,
      400: error(
        "VALIDATION_FAILED; URL_NOT_ALLOWED (the URL or what it resolves to is refused); ENDPOINT_PROBE_FAILED; ENDPOINT_NO_TOKEN_IDS (text only: ids re-tokenised from text would not match their log-probabilities); ENDPOINT_NOT_TOKEN_EXACT (a vllm or sglang server offering none of its kind's token modes, each mode's answer named)",
      ),
      409: error("CONFLICT: the key holds 100 endpoints, its limit"),
      ...bodyErrors,
    },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listPolicyEndpoints",
    tags: ["rescues"],
    summary: "The key's registered policy endpoints",
    responses: { 200: jsonOf("the registrations", z.object({ endpoints: z.array(PolicyEndpointView) })), ...errors },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getPolicyEndpoint",
    tags: ["rescues"],
    summary: "One registered policy endpoint of the key",
    request: { params: IdPath },
    responses: { 200: jsonOf("the registration", PolicyEndpointView), ...notFound("policy endpoint"), ...errors },
  }),
  remove: createRoute({
    method: "delete",
    path: "/{id}",
    operationId: "deletePolicyEndpoint",
    tags: ["rescues"],
    summary: "Delete a registered policy endpoint (its secret with it)",
    request: { params: IdPath },
    responses: { 200: jsonOf("deleted", z.object({ deleted: z.string() })), ...notFound("policy endpoint"), ...errors },
  }),
};

export const policyEndpointsApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, "rescues")))
    .openapi(withMiddleware(policyEndpointRoutes.register, readBody(deps, RegisterPolicyEndpoint)), async (c) =>
      c.json(await registerPolicyEndpoint(c.var.body, c.var.key.id, deps), 201),
    )
    .openapi(policyEndpointRoutes.list, async (c) =>
      c.json({ endpoints: (await deps.endpoints.list(c.var.key.id)).map(endpointView) }, 200),
    )
    .openapi(policyEndpointRoutes.get, async (c) =>
      c.json(endpointView(await ownEndpoint(c.var.key.id, c.req.valid("param").id, deps.endpoints)), 200),
    )
    .openapi(policyEndpointRoutes.remove, async (c) => {
      const [keyId, { id }] = [c.var.key.id, c.req.valid("param")];
      await ownEndpoint(keyId, id, deps.endpoints);
      await deps.endpoints.delete(keyId, id);
      return c.json({ deleted: id }, 200);
    });
