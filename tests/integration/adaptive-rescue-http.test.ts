import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryQueue } from "@harness-s/adapters/stores";
import type { SeedInstance } from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";

let inst: SeedInstance;
let deps: ReturnType<typeof memoryApiDeps>;
let api: { url: string; close: () => Promise<void> };
let key: string;

beforeAll(async () => {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  inst = await setup.instance(1);
  const byId = new Map([...inst.train, ...inst.heldout].map((t) => [t.id, t]));
  deps = memoryApiDeps({ tasks: { get: async (id) => byId.get(id) } });
  await seedPool(deps, inst.evolution.pool, inst.evolution.initialProfiles);
  key = await addKey(deps, "k", ["rescues"]);
  api = await startApi(deps);
}, 120_000);
afterAll(() => api.close());

const post = (body: unknown) =>
  fetch(`${api.url}/v1/rescues`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

describe("a caller's rescue in mode adaptive (issue 59 item 2)", () => {
  const ask = (over: Record<string, unknown>) => ({
    poolId: inst.evolution.pool.id,
    taskId: inst.train.find((t) => t.requirements.includes("pages"))!.id,
    failureTags: ["incomplete-results"],
    k: 2,
    rolloutsPerHarness: 3,
    mode: "adaptive",
    ...over,
  });

  it("resamples under H0 when the caller's resamples found successes almost always, and says so with the estimates", async () => {
    // Act: 95 of 100 reported resamples succeeded (capped at Beta(20, 2)), the siblings have only their profiles
    const res = await post(ask({ resampleEvidence: { attempts: 100, successes: 95 } }));
    // Assess: the same 6 rollouts, all under H0; the option and per-option estimates in the answer
    expect(res.status).toBe(202);
    const body = await res.json();
    expect(body.adaptive.option).toBe("resample");
    expect(body.chosen).toEqual([inst.evolution.pool.base.id]);
    expect(body.expected).toBe(6);
    expect(body.adaptive.estimates.map((e: { id: string }) => e.id)).toHaveLength(3);
    expect(body.adaptive.estimates.at(-1)).toMatchObject({ id: "h0", alpha: 20, beta: 2, cost: 6 });
    const sent = (deps.dispatch as MemoryQueue).take();
    expect(sent.map((m) => (m.body as { harnessId: string }).harnessId)).toEqual(
      Array(6).fill(inst.evolution.pool.base.id),
    );
  });

  it("rescues under the routed siblings, split as allocated, when the caller's resamples found nothing", async () => {
    const res = await post(ask({ resampleEvidence: { attempts: 1000, successes: 0 } }));
    const body = await res.json();
    expect(res.status).toBe(202);
    expect(body.adaptive.option).toBe("siblings");
    const sent = (deps.dispatch as MemoryQueue).take();
    expect(sent).toHaveLength(6);
    const counts: Record<string, number> = {};
    for (const m of sent)
      counts[(m.body as { harnessId: string }).harnessId] =
        (counts[(m.body as { harnessId: string }).harnessId] ?? 0) + 1;
    expect(counts).toEqual(body.adaptive.allocation);
    expect(Object.keys(counts).sort()).toEqual([...body.chosen].sort());
  });

  it("refuses adaptive with named harnesses and impossible evidence; documents the mode and the answer", async () => {
    expect((await post(ask({ harnesses: [inst.evolution.pool.base.id] }))).status).toBe(400);
    expect((await post(ask({ resampleEvidence: { attempts: 1, successes: 2 } }))).status).toBe(400);
    const doc = JSON.stringify(await (await fetch(`${api.url}/openapi.json`)).json());
    expect(doc).toContain('"adaptive"');
    expect(doc).toContain("resampleEvidence");
    expect(doc).toContain("no rescue was started");
  });
});
