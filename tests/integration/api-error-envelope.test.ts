import { createRoute } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Scope } from "@harness-s/core/access";
import { gatewaySettings } from "../../functions/api/gateway-setup.ts";
import { apiRouter, errorResponse } from "../../functions/api/http.ts";
import { addKey, memoryApiDeps, startApi } from "../api-factory.ts";

// Issue 52 item 15: every route's parameter and body errors answer the API's one error envelope,
// {error: {code, message}}, with a 400 naming the parameter, whatever parses them. Walks the
// OpenAPI document the API serves, so a route added later is walked too.

interface ParamSchema {
  type?: string;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: ParamSchema;
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: unknown;
}
type Document = { paths: Record<string, Record<string, Operation>> };

/**
 * One value that breaks each constraint a parameter's schema declares (a path parameter cannot be empty: it would be
 * another route).
 */
function invalidValues(p: Parameter): string[] {
  const s = p.schema ?? {};
  const bad: string[] = [];
  if (s.enum || s.const !== undefined) bad.push("not-an-option");
  if (s.type === "integer") bad.push("1.5", "x");
  if (s.type === "number") bad.push("x", "1e999");
  if (s.minimum !== undefined) bad.push(String(s.minimum - 1));
  if (s.maximum !== undefined) bad.push(String(s.maximum + 1));
  if (s.format === "date") bad.push("2026-13-45", "2026-02-30");
  if (s.minLength !== undefined && s.minLength > 0 && p.in !== "path") bad.push("");
  if (s.maxLength !== undefined) bad.push("a".repeat(s.maxLength + 1));
  if (s.pattern !== undefined) {
    const re = new RegExp(s.pattern, "u");
    const breaks = ["!", "_x", " x", "x y", "ü"].find((v) => !re.test(v));
    if (breaks !== undefined) bad.push(breaks);
  }
  return bad;
}

/** A value each parameter's schema accepts (for the parameters not under test). */
function validValue(p: Parameter): string {
  const s = p.schema ?? {};
  if (s.const !== undefined) return String(s.const);
  if (s.enum) return String(s.enum[0]);
  if (s.format === "date") return "2026-01-01";
  if (s.type === "integer" || s.type === "number") return String(s.minimum ?? 0);
  return "missing-1";
}

const WRONG_BODIES = ["[]", '"text"', "7", "null"];

let api: { url: string; close: () => Promise<void> };
let doc: Document;
let secret: string;

beforeAll(async () => {
  // A gateway whose upstream is never asked (each request here is refused before it): its chat route reads a body then.
  const gateway = await gatewaySettings({
    upstream: "http://127.0.0.1:9/v1",
    pool: "gw",
    env: "generic",
    timeoutMs: 1_000,
  });
  const deps = memoryApiDeps({ gateway });
  secret = await addKey(deps, "everything", [...Scope.options]);
  api = await startApi(deps);
  doc = await (await fetch(`${api.url}/openapi.json`)).json();
});
afterAll(() => api?.close());

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      path,
      method: method.toUpperCase(),
      op,
      params: op.parameters ?? [],
    })),
  );

/** The URL of `path` with each parameter's value (`values` by name; the rest valid, optional query ones left out). */
function urlOf(path: string, params: readonly Parameter[], values: Record<string, string>): string {
  const url = new URL(
    api.url +
      path.replace(/\{(\w+)\}/g, (_m, name: string) =>
        encodeURIComponent(values[name] ?? validValue({ name, in: "path" })),
      ),
  );
  for (const p of params.filter((q) => q.in === "query")) {
    const value = values[p.name] ?? (p.required ? validValue(p) : undefined);
    if (value !== undefined) url.searchParams.set(p.name, value);
  }
  return url.toString();
}

/**
 * What is wrong with an answer that should be the API's envelope, a 400 VALIDATION_FAILED naming `name`: undefined when
 * nothing.
 */
async function envelopeProblem(res: Response, name?: string): Promise<string | undefined> {
  const text = await res.text();
  let body: { error?: { code?: unknown; message?: unknown; issues?: unknown } } | null = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: not the envelope
  }
  const e = body?.error;
  const shaped =
    body !== null &&
    Object.keys(body).join() === "error" &&
    e?.code === "VALIDATION_FAILED" &&
    typeof e.message === "string";
  const named = name === undefined || `${e?.message} ${JSON.stringify(e?.issues ?? [])}`.includes(name);
  return res.status === 400 && shaped && named ? undefined : `${res.status} ${text.slice(0, 160)}`;
}

const send = (method: string, url: string, body?: string) =>
  fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${secret}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body,
  });

describe("every route of the served OpenAPI document answers bad input with the one error envelope", () => {
  it("declares, for every query and path parameter, a constraint a value can break", () => {
    const loose = operations().flatMap(({ op, params }) =>
      params
        .filter((p) => p.in !== "header" && invalidValues(p).length === 0)
        .map((p) => `${op.operationId} ${p.name}`),
    );
    expect(loose).toEqual([]);
    expect(operations().flatMap((o) => o.params).length).toBeGreaterThanOrEqual(20);
  });

  it("answers a 400 VALIDATION_FAILED envelope naming the parameter for each value that breaks one, before looking anything up", async () => {
    const problems: string[] = [];
    let cases = 0;
    for (const { path, method, op, params } of operations()) {
      for (const p of params.filter((q) => q.in === "query" || q.in === "path")) {
        for (const bad of invalidValues(p)) {
          const problem = await envelopeProblem(
            await send(method, urlOf(path, params, { [p.name]: bad }), op.requestBody ? "{}" : undefined),
            p.name,
          );
          if (problem) problems.push(`${method} ${path} ${p.name}=${JSON.stringify(bad.slice(0, 20))}: ${problem}`);
          cases++;
        }
      }
    }
    expect(problems).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(40);
  });

  it("answers a body of the wrong type with the same envelope on every route that reads one", async () => {
    const reading = operations().filter((o) => o.op.requestBody);
    expect(reading.length).toBeGreaterThanOrEqual(8);
    const problems: string[] = [];
    for (const { path, method, params } of reading) {
      for (const body of WRONG_BODIES) {
        const problem = await envelopeProblem(await send(method, urlOf(path, params, {}), body));
        if (problem) problems.push(`${method} ${path} body ${body}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe("a path or method no route has", () => {
  it.each([
    ["GET", "/v1/nothing"],
    ["DELETE", "/v1/quotes"],
  ])("%s %s is a 404 NOT_FOUND in the same envelope (was hono's plain-text 404)", async (method, path) => {
    const res = await send(method, `${api.url}${path}`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "NOT_FOUND", message: `route "${method} ${path}" not found` } });
  });
});

describe("the zod validators a route declares (query and path parameters; a zod body, which no route of the API declares) answer their failures in the same envelope", () => {
  const app = apiRouter()
    .openapi(
      createRoute({
        method: "post",
        path: "/things/{id}",
        request: {
          params: z.object({ id: z.string().regex(/^\d+$/) }),
          query: z.object({ mode: z.enum(["a", "b"]) }),
          body: { required: true, content: { "application/json": { schema: z.object({ n: z.number() }) } } },
        },
        responses: { 200: { description: "ok" } },
      }),
      (c) => c.json({ ok: true }, 200),
    )
    .onError(errorResponse);
  const post = (path: string, body: string, type = "application/json") =>
    app.request(path, { method: "POST", headers: { "content-type": type }, body });

  it.each([
    ["a bad path parameter", "/things/x?mode=a", '{"n":1}', undefined, 400, "id"],
    ["a bad query parameter", "/things/1?mode=c", '{"n":1}', undefined, 400, "mode"],
    ["a body of the wrong shape", "/things/1?mode=a", '{"n":"1"}', undefined, 400, "n"],
    ["a body that is not JSON (hono's own refusal)", "/things/1?mode=a", "{oops", undefined, 400, "JSON"],
    [
      "a body of another media type (hono's own refusal)",
      "/things/1?mode=a",
      "n=1",
      "text/plain",
      415,
      "application/json",
    ],
  ])("%s", async (_what, path, body, type, status, named) => {
    const res = await post(path, body, type);
    const answer = await res.json();
    expect(res.status).toBe(status);
    expect(Object.keys(answer)).toEqual(["error"]);
    expect(answer.error.code).toBe(status === 415 ? "UNSUPPORTED_MEDIA_TYPE" : "VALIDATION_FAILED");
    expect(`${answer.error.message} ${JSON.stringify(answer.error.issues ?? [])}`).toContain(named);
  });
});
