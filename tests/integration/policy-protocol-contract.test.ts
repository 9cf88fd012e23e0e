import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { CORE_ERROR_CODES } from "@harness-s/core";
import {
  CreatePolicyV2,
  RenderRequestV2,
  ReplayRequestV2,
  SampleRequestV2,
  ScoreRequestV2,
  UpdateRequestV2,
} from "@harness-s/core/protocol";
import { WORKER_ERROR_CODES } from "@harness-s/adapters";
import { ensureWorkerVenv } from "../../packages/cli/src/policy-worker.ts";

// Protocol v2's request shapes are declared twice, once per language: as zod schemas here and as
// the worker's pydantic models (what its OpenAPI document is generated from). This test reads the
// worker's JSON Schemas from its venv and compares them with `z.toJSONSchema` of the TypeScript
// types, both ways: the same fields at every level, the same defaults, the same required fields.

type Schema = { [k: string]: unknown };
const PAIRS: [string, z.ZodType][] = [
  ["CreatePolicy", CreatePolicyV2],
  ["SampleRequest", SampleRequestV2],
  ["RenderRequest", RenderRequestV2],
  ["ScoreRequest", ScoreRequestV2],
  ["ReplayRequest", ReplayRequestV2],
  ["UpdateRequest", UpdateRequestV2],
];

const PRINT_SCHEMAS = `
import json
from harness_s_worker import schemas
print(json.dumps({n: getattr(schemas, n).model_json_schema() for n in ${JSON.stringify(PAIRS.map(([n]) => n))}}))
`;

/** The object schema behind refs, nullable unions and arrays, or undefined for a leaf. */
function objectOf(schema: Schema | undefined, root: Schema): Schema | undefined {
  if (!schema) return undefined;
  if (typeof schema.$ref === "string")
    return objectOf((root.$defs as Record<string, Schema>)[schema.$ref.split("/").pop()!], root);
  const options = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (options) {
    const objects = options.map((o) => objectOf(o, root)).filter((o) => o !== undefined);
    return objects.length === 1 ? objects[0] : undefined; // a union of several object shapes (VersionWanted) is compared as a leaf
  }
  if (schema.type === "array" && !Array.isArray(schema.items))
    return objectOf(schema.items as Schema | undefined, root);
  return schema.type === "object" && schema.properties ? schema : undefined;
}

/** A field's default with its object's own field defaults filled in (zod's `prefault({})` is written as `{}`). */
function filledDefault(field: Schema, root: Schema): unknown {
  const value = field.default;
  const shape = objectOf(field, root);
  if (!shape || typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const props = shape.properties as Record<string, Schema>;
  const filled = Object.fromEntries(Object.entries(props).map(([k, p]) => [k, filledDefault(p, root)]));
  return { ...filled, ...value };
}

/** A default as compared: pydantic writes `null` for an optional field's absent default, zod writes nothing. */
function withoutNulls(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined));
}

const BOUND_KEYS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "const"] as const;

/**
 * A leaf's bounds as compared: minimum, maximum (exclusive or not), enum values, through refs and
 * nullable unions, and an array's items' under `items.`. Zod writes ±2^53−1 for every integer,
 * pydantic nothing: those are no bound.
 */
function boundsOf(schema: Schema | undefined, root: Schema, prefix = ""): Record<string, unknown> {
  if (!schema) return {};
  if (typeof schema.$ref === "string")
    return boundsOf((root.$defs as Record<string, Schema>)[schema.$ref.split("/").pop()!], root, prefix);
  const options = ((schema.anyOf ?? schema.oneOf) as Schema[] | undefined)?.filter((o) => o.type !== "null");
  if (options?.length === 1) return boundsOf(options[0], root, prefix);
  if (options?.length && options.every((o) => o.const !== undefined))
    return { [`${prefix}enum`]: options.map((o) => o.const) };
  const out: Record<string, unknown> = {};
  for (const key of BOUND_KEYS) {
    const value = schema[key];
    if (value !== undefined && Math.abs(Number(value)) !== Number.MAX_SAFE_INTEGER) out[`${prefix}${key}`] = value;
  }
  if (schema.type === "array" && schema.items && !Array.isArray(schema.items))
    Object.assign(out, boundsOf(schema.items as Schema, root, `${prefix}items.`));
  return out;
}

/**
 * Every difference between two request schemas, as `path: what` lines: fields on one side only,
 * defaults, required-ness, bounds (minimum, maximum, enum values), recursively where both sides declare an object. A
 * field the worker
 * takes as a free-form dict (chat messages, tools) is compared as a leaf.
 */
function protocolDifferences(ts: Schema, py: Schema, tsRoot: Schema, pyRoot: Schema, path: string): string[] {
  const out: string[] = [];
  const tsProps = (ts.properties ?? {}) as Record<string, Schema>;
  const pyProps = (py.properties ?? {}) as Record<string, Schema>;
  for (const key of Object.keys(tsProps)) if (!(key in pyProps)) out.push(`${path}.${key}: only in TypeScript`);
  for (const key of Object.keys(pyProps)) if (!(key in tsProps)) out.push(`${path}.${key}: only in the worker`);
  const tsRequired = new Set((ts.required ?? []) as string[]);
  const pyRequired = new Set((py.required ?? []) as string[]);
  for (const key of Object.keys(tsProps).filter((k) => k in pyProps)) {
    const [a, b] = [tsProps[key]!, pyProps[key]!];
    const [da, db] = [withoutNulls(filledDefault(a, tsRoot)), withoutNulls(filledDefault(b, pyRoot))];
    if (JSON.stringify(da) !== JSON.stringify(db))
      out.push(`${path}.${key}: default ${JSON.stringify(da)} in TypeScript, ${JSON.stringify(db)} in the worker`);
    if (tsRequired.has(key) !== pyRequired.has(key))
      out.push(
        `${path}.${key}: ${tsRequired.has(key) ? "required" : "optional"} in TypeScript, ${pyRequired.has(key) ? "required" : "optional"} in the worker`,
      );
    const [ba, bb] = [boundsOf(a, tsRoot), boundsOf(b, pyRoot)];
    for (const bound of new Set([...Object.keys(ba), ...Object.keys(bb)]))
      if (JSON.stringify(ba[bound]) !== JSON.stringify(bb[bound]))
        out.push(
          `${path}.${key}: ${bound} ${JSON.stringify(ba[bound] ?? null)} in TypeScript, ${JSON.stringify(bb[bound] ?? null)} in the worker`,
        );
    const [oa, ob] = [objectOf(a, tsRoot), objectOf(b, pyRoot)];
    if (oa && ob) out.push(...protocolDifferences(oa, ob, tsRoot, pyRoot, `${path}.${key}`));
  }
  return out;
}

let worker: Record<string, Schema>;
beforeAll(async () => {
  const python = await ensureWorkerVenv();
  const cwd = fileURLToPath(new URL("../../packages/policy-worker/", import.meta.url));
  const { stdout } = await promisify(execFile)(python, ["-c", PRINT_SCHEMAS], { cwd });
  worker = JSON.parse(stdout);
}, 600_000);

describe("protocol v2: the TypeScript types and the worker's models agree", () => {
  it.each(PAIRS)("%s: the same fields, defaults and required fields at every level, both ways", (name, ts) => {
    const tsSchema = z.toJSONSchema(ts, { io: "input", unrepresentable: "any" }) as Schema;
    expect(protocolDifferences(tsSchema, worker[name]!, tsSchema, worker[name]!, name)).toEqual([]);
  });

  it("reports a changed default, a field on one side only, a changed required-ness, a changed maximum and an enum value on one side", () => {
    // Prepare: the worker's update request as it is, and three edited copies of the TypeScript side.
    const py = worker.UpdateRequest!;
    const tsSchema = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Schema;
    const base = UpdateRequestV2.shape;
    const changedDefault = z
      .object({
        ...base,
        loss: base.loss
          .unwrap()
          .extend({ clip_low: z.number().default(0.3) })
          .strict()
          .prefault({}),
      })
      .strict();
    const extraField = z.object({ ...base, note: z.string().optional() }).strict();
    const requiredEpochs = z
      .object({ ...base, optim: base.optim.extend({ epochs: z.number().int().min(1).max(16) }).strict() })
      .strict();
    const changedBounds = z
      .object({
        ...base,
        optim: base.optim.extend({ lr: z.number().positive().max(2) }).strict(),
        loss: base.loss
          .unwrap()
          .extend({ agg: z.enum(["token-mean", "sequence-mean", "constant", "sum"]).default("token-mean") })
          .strict()
          .prefault({}),
      })
      .strict();
    // Act
    const diffs = [changedDefault, extraField, requiredEpochs, changedBounds].map((s) =>
      protocolDifferences(tsSchema(s), py, tsSchema(s), py, "UpdateRequest"),
    );
    // Assess
    expect(diffs[0]).toContain("UpdateRequest.loss.clip_low: default 0.3 in TypeScript, 0.2 in the worker");
    expect(diffs[1]).toEqual(["UpdateRequest.note: only in TypeScript"]);
    expect(diffs[2]).toEqual([
      "UpdateRequest.optim.epochs: default null in TypeScript, 1 in the worker",
      "UpdateRequest.optim.epochs: required in TypeScript, optional in the worker",
    ]);
    expect(diffs[3]!.sort()).toEqual([
      'UpdateRequest.loss.agg: enum ["token-mean","sequence-mean","constant","sum"] in TypeScript, ["token-mean","sequence-mean","constant"] in the worker',
      "UpdateRequest.optim.lr: maximum 2 in TypeScript, 1 in the worker",
    ]);
  });

  it("every error code the worker answers is in the TypeScript vocabulary (core's codes, or the worker's own mapped to a domain code)", async () => {
    // Prepare: the codes the worker raises, read from its source (WorkerError(status, "CODE", …) and error(status,
    // "CODE", …)).
    const dir = fileURLToPath(new URL("../../packages/policy-worker/harness_s_worker/", import.meta.url));
    const sources = await Promise.all(
      (await readdir(dir)).filter((f) => f.endsWith(".py")).map((f) => readFile(join(dir, f), "utf8")),
    );
    const raised = new Set(
      sources.flatMap((src) => [...src.matchAll(/(?:WorkerError|error)\(\s*\d{3},\s*"([A-Z_]+)"/g)].map((m) => m[1]!)),
    );
    // Act
    const unknown = [...raised].filter(
      (code) => !(code in WORKER_ERROR_CODES) && !(CORE_ERROR_CODES as readonly string[]).includes(code),
    );
    // Assess
    expect(raised.size).toBeGreaterThanOrEqual(9);
    expect(raised).toContain("UPDATE_IN_PROGRESS");
    expect(unknown).toEqual([]);
  });
});
