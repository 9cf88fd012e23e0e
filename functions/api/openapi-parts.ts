import type { ZodMediaTypeObject } from "@asteasolutions/zod-to-openapi";
import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Env } from "hono";
import { z } from "zod";
import { Id } from "@harness-s/core";
import { MAX_URL_CHARS, RATE_LIMIT_HOLD_MS } from "./request-limits.ts";

/*
 * What every resource's routes share in the OpenAPI document: how bodies, parameters and responses
 * are documented, the error answers, the document's top-level fields. Bodies are documented with
 * the zod types' JSON Schema but read by the `readBody` middleware (size, depth and streaming
 * limits), so no validator is attached to a body; query and path parameters are declared as zod
 * types (`request.query`, `request.params`), parsed by their validators and documented by
 * {@link documented} with the same JSON Schema.
 */

/** A request body documented by its zod type's JSON Schema (a plain schema object: no validator is attached). */
export const jsonBody = (schema: z.ZodType) => ({
  required: true,
  content: {
    "application/json": {
      schema: z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as ZodMediaTypeObject["schema"],
    },
  },
});
const AnyObject = z.looseObject({});
/** A JSON response of a zod type (typed handlers are checked against it); any object when none is given. */
export function jsonOf(description: string): {
  description: string;
  content: { "application/json": { schema: typeof AnyObject } };
};
export function jsonOf<S extends z.ZodType>(
  description: string,
  schema: S,
): { description: string; content: { "application/json": { schema: S } } };
export function jsonOf(description: string, schema: z.ZodType = AnyObject) {
  return { description, content: { "application/json": { schema } } };
}

export const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), issues: z.array(z.string()).optional() }),
});
export const error = (description: string) => jsonOf(description, ErrorBody);
export const errors = {
  400: error("malformed, oversized or invalid body or parameter (issues name each bad field)"),
  401: error("missing, unknown, revoked or expired API key, or a rotated-out secret past its grace"),
  403: error("the key lacks the scope"),
  413: error("body larger than the endpoint accepts"),
  414: error(`URL longer than ${MAX_URL_CHARS} characters`),
  429: {
    ...error(
      `RATE_LIMITED: past the key's rate (requests per second, burst), answered after at most ${RATE_LIMIT_HOLD_MS} ms with a Retry-After header; ` +
        "QUOTA_EXCEEDED: the key's request quota is used up; CONCURRENCY_LIMIT (experiments): the key already has its limit of runs queued or running",
    ),
    headers: {
      "Retry-After": {
        description:
          "RATE_LIMITED only: whole seconds (at least 1) until the key's next request can pass, counted from this answer",
        schema: { type: "integer" as const, minimum: 1 },
      },
    },
  },
  503: error(
    "a backing store or queue is unavailable (retry); PARTIAL_SEND lists the messages that were and were not queued",
  ),
};
/** What only an endpoint that reads a body answers. */
export const bodyErrors = {
  408: error("the body stalled (5 s without a byte) or took longer than 15 s in all"),
  415: error("the body was not sent as application/json (UTF-8)"),
};
type JsonSchema = {
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  [k: string]: unknown;
};
/** A parameter's schema as every OpenAPI version's types take it (the rest of its keywords ride along). */
type ParamSchema = { type?: "string" | "number" | "integer" | "boolean" };
type Parameter = { name: string; in: "query" | "path"; required: boolean; description?: string; schema: ParamSchema };
/** A zod type's JSON Schema, as a parameter's schema is written. */
const jsonSchemaOf = (schema: z.ZodType): JsonSchema => {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  return json;
};
/** The parameters of a zod object type, each with its constraints (its validator parses them with the same type). */
function parametersOf(schema: z.ZodType, where: Parameter["in"]): Parameter[] {
  const { properties = {}, required = [] } = jsonSchemaOf(schema);
  return Object.entries(properties).map(([name, { description, ...s }]) => ({
    name,
    in: where,
    required: where === "path" || required.includes(name),
    ...(description ? { description } : {}),
    schema: s as ParamSchema,
  }));
}

/** A route's `{id}`: an {@link Id}. */
export const IdPath = z.object({ id: Id });

/**
 * A route as the document shows it: its path and query parameters (the zod types its validators
 * parse) documented with their JSON Schema, as bodies are, rather than the generator's own
 * rendering (which would widen a coerced number to `null` and drop a calendar day's pattern).
 */
export function documented<R extends RouteConfig>(route: R): RouteConfig {
  const { params, query, ...request } = route.request ?? {};
  if (!params && !query) return route;
  const parameters = [...(params ? parametersOf(params, "path") : []), ...(query ? parametersOf(query, "query") : [])];
  return { ...route, request, parameters };
}
export const notFound = (what: string) => ({ 404: error(`no such ${what}`) });
/** What a request that is quoted first answers when the quote is above a budget. */
export const overBudget = {
  402: error("the request's quote is above its own USD budget or what is left of the key's (nothing was started)"),
};

export const DEFAULT_SERVERS = [{ url: "http://127.0.0.1:18787", description: "harness-s serve (local stand-ins)" }];

/** The document's top-level fields: info, servers, the bearer scheme every operation but two needs. */
export function documentConfig(servers: { url: string; description?: string }[] = DEFAULT_SERVERS) {
  return {
    openapi: "3.1.0",
    info: {
      title: "Harness-S router API",
      version: "1",
      description:
        "Route tasks to sibling harnesses, manage pools and profiles, run elastic rescues and paired experiments, issue and revoke API keys.",
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
      {
        name: "gateway",
        description:
          "The Rank-1 harness gateway: an OpenAI-compatible endpoint that routes each episode to a harness and applies it",
      },
      {
        name: "keys",
        description:
          "API keys: issue with scopes and limits, rotate with a grace, revoke, and each key's events (admin keys; another key sees and rotates itself)",
      },
      { name: "account", description: "Usage, liveness, this document" },
    ],
  };
}

/** Adds the bearer scheme the document's `security` names (the generator writes only what is registered). */
export function registerSecurity<E extends Env>(app: OpenAPIHono<E>) {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
}
