import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../functions/api/openapi.ts";
import { memoryApiDeps, startApi } from "../api-factory.ts";

let api: { url: string; close: () => Promise<void> };
let served: Record<string, unknown> & {
  paths: Record<string, Record<string, { operationId?: string }>>;
  servers?: unknown[];
  tags?: unknown[];
};

beforeAll(async () => {
  api = await startApi(memoryApiDeps());
  served = await (await fetch(`${api.url}/openapi.json`)).json();
});
afterAll(() => api.close());

/** Typechecks `client` beside the types openapi-typescript generated from the served document. */
async function typecheckClient(client: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "hs-openapi-"));
  writeFileSync(join(dir, "api.ts"), astToString(await openapiTS(served as never)));
  writeFileSync(join(dir, "client.ts"), client);
  const program = ts.createProgram([join(dir, "client.ts")], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

const client = (body: string) => `
import type { paths } from "./api";
type RouteBody = paths["/v1/route"]["post"]["requestBody"]["content"]["application/json"];
type Decision = paths["/v1/route"]["post"]["responses"][200]["content"]["application/json"];
export async function route(base: string, key: string, body: RouteBody): Promise<Decision> {
  const res = await fetch(base + "/v1/route", { method: "POST", headers: { authorization: "Bearer " + key, "content-type": "application/json" }, body: JSON.stringify(body) });
  return (await res.json()) as Decision;
}
export async function firstChoice(base: string, key: string): Promise<string | undefined> {
  const decision = await route(base, key, ${body});
  return decision.chosen[0];
}
`;

describe("the OpenAPI document", () => {
  it("is generated from the routes: the served document is openApiDocument(), with servers and a unique operationId per operation", () => {
    expect(served).toEqual(openApiDocument());
    expect(served.servers?.length).toBeGreaterThan(0);
    const ids = Object.values(served.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    expect(ids.length).toBeGreaterThanOrEqual(16);
    expect(ids.every((id) => typeof id === "string" && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("declares the pool evolution (issue 55, item 4): POST /v1/pools takes a pool or {evolve}, answers 201 or 202, and its job is polled at /v1/pools/evolutions/{id}", () => {
    type Operation = { operationId?: string; requestBody?: unknown; responses?: Record<string, unknown> };
    const op = (path: string, method: string) => served.paths[path]?.[method] as Operation | undefined;
    const create = op("/v1/pools", "post")!;
    const body = JSON.stringify(create.requestBody);
    expect(body).toContain('"evolve"');
    expect(body).toContain('"devTasks"');
    expect(Object.keys(create.responses ?? {})).toEqual(expect.arrayContaining(["201", "202", "402"]));
    expect(op("/v1/pools/evolutions/{id}", "get")?.operationId).toBe("getPoolEvolution");
    expect(JSON.stringify(op("/v1/quotes", "post")?.requestBody)).toContain('"pool"');
  });

  it("documents a quote's environment and model (issue 57, item 3): the basis's configuration with its tokens per rollout and GPU seconds per token, the tokens in its usage", () => {
    const create = served.paths["/v1/quotes"]?.post as { responses?: Record<string, unknown> } | undefined;
    const answer = JSON.stringify(create?.responses?.["200"] ?? {});
    for (const field of [
      "configuration",
      "sampledTokensPerRollout",
      "trainedTokensPerTrainingRollout",
      "gpuSecondsPerToken",
      "gpuSource",
      "gpuPer",
      "generatedTokensPerRollout",
      "paths",
      "note",
    ])
      expect(answer).toContain(`"${field}"`);
    expect(answer).toContain("the model's GPU seconds per token (`gpuPer` says which)");
    for (const field of ["sampledTokens", "trainedTokens", "generatedTokens", "gpuSeconds"])
      expect(answer).toContain(field);
  });

  it("declares the API keys' routes (issue 56): each operation under the keys tag with the errors it answers, the secret shown once, the 429 with its Retry-After", () => {
    type Schema = { description?: string; properties?: Record<string, Schema> };
    type Response = {
      description: string;
      headers?: Record<string, { description?: string; schema?: { type?: string } }>;
      content?: { "application/json"?: { schema: Schema } };
    };
    type Operation = { operationId?: string; tags?: string[]; responses: Record<string, Response> };
    const op = (path: string, method: string) => served.paths[path]?.[method] as Operation | undefined;
    // Each operation, the statuses it answers, and (list, get, rotate need no scope) whether a 403 can be one of them.
    const expected: [path: string, method: string, operationId: string, statuses: string[], forbids: boolean][] = [
      ["/v1/keys", "post", "createKey", ["201", "400", "401", "403", "415", "429"], true],
      ["/v1/keys", "get", "listKeys", ["200", "401", "429"], false],
      ["/v1/keys/{id}", "get", "getKey", ["200", "401", "404", "429"], false],
      ["/v1/keys/{id}", "patch", "updateKey", ["200", "400", "401", "403", "404", "409", "429"], true],
      ["/v1/keys/{id}", "delete", "revokeKey", ["200", "401", "403", "404", "409", "429"], true],
      ["/v1/keys/{id}/rotate", "post", "rotateKey", ["200", "400", "401", "403", "404", "409", "429"], true],
      ["/v1/keys/{id}/events", "get", "listKeyEvents", ["200", "401", "403", "404", "429"], true],
    ];
    for (const [path, method, operationId, statuses, forbids] of expected) {
      const operation = op(path, method);
      expect(operation?.operationId, `${method} ${path}`).toBe(operationId);
      expect(operation?.tags).toEqual(["keys"]);
      expect(Object.keys(operation!.responses), operationId).toEqual(expect.arrayContaining(statuses));
      expect("403" in operation!.responses, `${operationId} documents a 403`).toBe(forbids);
    }
    expect((served.tags as { name: string }[]).map((t) => t.name)).toContain("keys");

    // The secret is in the replies of create and rotate alone, each saying it is shown this once.
    const withSecret = {
      createKey: op("/v1/keys", "post")!.responses["201"]!,
      rotateKey: op("/v1/keys/{id}/rotate", "post")!.responses["200"]!,
    };
    for (const [operationId, reply] of Object.entries(withSecret)) {
      expect(reply.description, operationId).toMatch(/shown this once/);
      expect(reply.content?.["application/json"]?.schema.properties?.secret?.description, operationId).toMatch(
        /shown this once/,
      );
    }
    for (const [path, method] of [
      ["/v1/keys", "get"],
      ["/v1/keys/{id}", "get"],
      ["/v1/keys/{id}", "patch"],
      ["/v1/keys/{id}", "delete"],
      ["/v1/keys/{id}/events", "get"],
    ] as const) {
      expect(JSON.stringify(op(path, method)!.responses["200"]), `${method} ${path}`).not.toMatch(/"secret"/);
    }

    const limited = op("/v1/keys", "get")!.responses["429"]!;
    expect(limited.description).toMatch(/RATE_LIMITED/);
    expect(limited.description).toMatch(/QUOTA_EXCEEDED/);
    expect(limited.headers?.["Retry-After"]?.schema?.type).toBe("integer");
    expect(op("/v1/route", "post")!.responses["429"]).toEqual(limited);
  });

  it("passes Redocly's recommended rules, and every operation's tag is declared, with no error and no warning", async () => {
    const config = await createConfig({ extends: ["recommended"], rules: { "operation-tag-defined": "error" } });
    const problems = await lintFromString({
      source: JSON.stringify(served),
      absoluteRef: `${api.url}/openapi.json`,
      config,
    });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
  });

  it("generates client types (openapi-typescript) that typecheck a correct call and reject a wrong one", async () => {
    expect(
      await typecheckClient(
        client(
          `{ poolId: "embedded", task: { id: "t1", family: "app", tags: ["app"] }, failureTags: ["incomplete-results"], k: 2 }`,
        ),
      ),
    ).toEqual([]);
    const wrong = await typecheckClient(client(`{ poolId: "embedded", k: 2 }`));
    expect(wrong.join("\n")).toMatch(/task/);
  }, 60_000);
});
