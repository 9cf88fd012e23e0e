import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { startExperimentStack, waitForExperiment } from "../../packages/cli/src/runtime/local-aws.ts";
import { renderReport } from "../../packages/cli/src/report/markdown.ts";
import { writePlots } from "../../packages/cli/src/report/output.ts";
import { openApiDocument } from "../../functions/api/openapi.ts";
import { addKey, startApi } from "../api-factory.ts";

// A finished run's report and plots over the HTTP API on the local stack (DynamoDB Local, fauxqs,
// the coordinator storing them in the stack's reports folder), against what the CLI's code makes
// of the same summary and pools.
const setup = embeddedSetup(defaultEmbeddedSettings);
const train = {
  steps: 1,
  batchSize: 4,
  curveEvery: 1,
  curveTasks: 4,
  auditEvery: 2,
  reanchorEvery: 1,
  reanchorBudget: 6,
};
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

let stack: LocalStack;
let api: { url: string; close: () => Promise<void> };
let owner: string;
let other: string;
let admin: string;
const cliDir = mkdtempSync(join(tmpdir(), "hs-report-cli-"));

beforeAll(async () => {
  stack = await startExperimentStack(setup, "test", undefined, { dynamoEndpoint: inject("dynamoEndpoint") });
  api = await startApi(stack.deps);
  owner = await addKey(stack.deps, "owner", ["experiments"]);
  other = await addKey(stack.deps, "other", ["experiments"]);
  admin = await addKey(stack.deps, "admin", ["admin"]);
}, 120_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  rmSync(cliDir, { recursive: true, force: true });
});

const get = (path: string, secret = owner) =>
  fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${secret}` } });
const start = async (body: unknown) => {
  const res = await fetch(`${api.url}/v1/experiments`, {
    method: "POST",
    headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
};

describe("GET /v1/experiments/{id}/report and …/plots on the local stack", () => {
  it("a done run's report (the paired comparison with its spread) and plots, equal to what the CLI's code makes of its summary; another key gets 404", async () => {
    // Prepare: a tiny embedded run, one seed, one training step.
    const id = await start({
      seeds: [3],
      arms: ["grpo", "grpo-budget", "harness-s"],
      train,
      evalSamples: 3,
      evalTasks: 6,
    });
    const ended = await waitForExperiment(stack, id);
    expect(ended.status).toBe("done");
    // Act
    const report = await get(`/v1/experiments/${id}/report`);
    const markdown = await report.text();
    const listing = await get(`/v1/experiments/${id}/plots`);
    const { plots } = (await listing.json()) as { plots: { file: string; url: string }[] };
    const pngs = await Promise.all(plots.map((p) => get(p.url)));
    // Assess: markdown with the paired comparison table and its spread over seeds.
    expect(report.status).toBe(200);
    expect(report.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(markdown).toContain("## Paired differences (H0 Avg@3)");
    expect(markdown).toContain("| comparison | train | held-out |");
    expect(markdown).toMatch(/\n\| harness-s − grpo-budget \| [+-]\d+\.\d ± /);
    expect(markdown).toMatch(/\n\| harness-s \| \d+ \(\d\.\d\d\) \| \d+\.\d ± /);
    // The same text as the CLI's renderReport of the run's summary and each seed's pool (with its harm).
    const { evolution } = await setup.instance(3);
    const pools = { "3": { ...evolution.pool, harm: evolution.harm } };
    expect(markdown).toBe(renderReport(ended.summary!, undefined, { pools }));
    // The plots: PNGs, byte for byte the CLI's writePlots of the same summary (one training step: no utilities plot,
    // its utilities measured at one step only).
    expect(plots).toEqual([{ file: "curves.png", url: `/v1/experiments/${id}/plots/curves.png` }]);
    await writePlots(cliDir, ended.summary!);
    for (const [i, res] of pngs.entries()) {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect([...bytes.slice(0, 8)]).toEqual(PNG_MAGIC);
      expect(Buffer.from(bytes).equals(readFileSync(join(cliDir, plots[i]!.file)))).toBe(true);
    }
    // Another key: the run does not exist for it, its report and plots neither; an admin reads them.
    for (const path of [
      `/v1/experiments/${id}/report`,
      `/v1/experiments/${id}/plots`,
      `/v1/experiments/${id}/plots/curves.png`,
    ]) {
      const res = await get(path, other);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { code: string; message: string } }).error).toEqual({
        code: "NOT_FOUND",
        message: `experiment "${id}" not found`,
      });
    }
    expect((await get(`/v1/experiments/${id}/report`, admin)).status).toBe(200);
  }, 180_000);

  it("a run without a report says why (404); names that are not a plot's are a 400", async () => {
    // A run stopped at its cap before any unit finished: no report, and the 404 says so.
    const id = await start({ seeds: [3], arms: ["grpo"], train, budget: { rollouts: 5 } });
    const early = await get(`/v1/experiments/${id}/report`);
    expect(early.status).toBe(404);
    expect(((await early.json()) as { error: { message: string } }).error.message).toMatch(
      /is (queued|running): its report and plots are made when it ends|ended stopped with no report/,
    );
    expect((await waitForExperiment(stack, id)).status).toBe("stopped");
    const res = await get(`/v1/experiments/${id}/report`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringContaining("ended stopped with no report"),
    });
    expect(((await (await get(`/v1/experiments/${id}/plots`)).json()) as { plots: unknown[] }).plots).toEqual([]);
    for (const file of ["report.md", "..%2Freport.png", ".hidden.png", "CURVES.png"])
      expect((await get(`/v1/experiments/${id}/plots/${file}`)).status, file).toBe(400);
    expect((await get(`/v1/experiments/${id}/plots/sweep.png`)).status).toBe(404);
  }, 120_000);
});

it("the OpenAPI document declares the three routes with their media types and errors (issue 57)", () => {
  type Operation = {
    operationId: string;
    parameters?: { name: string; schema: { pattern?: string } }[];
    responses: Record<string, { content?: Record<string, unknown> }>;
  };
  const paths = openApiDocument().paths as Record<string, { get?: Operation }>;
  const op = (path: string) => paths[`/v1/experiments${path}`]?.get;
  expect(op("/{id}/report")).toMatchObject({
    operationId: "getExperimentReport",
    responses: { 200: { content: { "text/markdown": expect.anything() } } },
  });
  expect(op("/{id}/plots")).toMatchObject({
    operationId: "listExperimentPlots",
    responses: { 200: { content: { "application/json": expect.anything() } } },
  });
  expect(op("/{id}/plots/{file}")).toMatchObject({
    operationId: "getExperimentPlot",
    responses: { 200: { content: { "image/png": { schema: { type: "string", format: "binary" } } } } },
  });
  expect(op("/{id}/plots/{file}")!.parameters!.find((p) => p.name === "file")!.schema.pattern).toBe(
    "^[a-z0-9][a-z0-9-]*\\.png$",
  );
  for (const path of ["/{id}/report", "/{id}/plots", "/{id}/plots/{file}"])
    expect(Object.keys(op(path)!.responses), path).toEqual(expect.arrayContaining(["200", "401", "403", "404", "501"]));
});
