import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXPERIMENT_PROGRESS_MS, ExperimentRequest, runExperimentJob } from "@harness-s/core/experiment";
import { DEFAULT_QUOTE_BASIS, plannedRollouts } from "@harness-s/core/quoting";
import type { Environment } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { MemoryExperimentStore } from "@harness-s/adapters/stores";
import { addKey, memoryApiDeps, startApi } from "../api-factory.ts";

// Issue 70, item 3: one state a job shows, matching its record at every poll of a run of about three minutes, with a
// count that moves at least every few seconds on every long step. The run is the embedded suite through the API
// (`POST /v1/experiments`, `GET /v1/experiments/{id}` each second) and the coordinator's use-case on the same store;
// each episode waits a while before it starts (an environment that answers slowly), so the three minutes cost little
// CPU. At each poll the record is read straight from the store before and after the request: the answer's state, label,
// step count and rollouts are one of those two records' (the job moved between them at most), never a label behind
// its state ("queued" while it runs, a count of the running kind on a failed run).
const RUN_MS = 180_000;
const request = {
  seeds: [3],
  arms: ["grpo", "harness-s"],
  train: { steps: 3, batchSize: 2, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 },
  evalTasks: 3,
  evalSamples: 3,
};
const experiments = new MemoryExperimentStore();
const deps = memoryApiDeps({ experiments });
let api: { url: string; close: () => Promise<void> };
let key: string;

beforeAll(async () => {
  api = await startApi(deps);
  key = await addKey(deps, "k-poll", ["experiments"]);
});
afterAll(() => api.close());

/**
 * How a connection closed under a request shows: reset, or closed by the server as the request went out (undici's
 * "other side closed").
 */
const CLOSED_UNDER_REQUEST = new Set(["ECONNRESET", "UND_ERR_SOCKET"]);

/**
 * A GET as a polling client makes it: once more on a connection the server closed (the run shares this process's CPU
 * with the API, and an idle keep-alive connection may be closed as a reused request goes out on it).
 */
async function getJson(url: string, key: string): Promise<any> {
  const get = () => fetch(url, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json());
  return get().catch((err: unknown) => {
    if (!CLOSED_UNDER_REQUEST.has((err as { cause?: { code?: string } }).cause?.code ?? "")) throw err;
    return get();
  });
}

/**
 * The embedded setup, its episodes started one at a time, each `delayMs` after the one before: slow in wall time,
 * cheap in CPU.
 */
function slowSetup(delayMs: number) {
  const setup = embeddedSetup({ ...defaultEmbeddedSettings, poolSize: 2 });
  let turn: Promise<unknown> = Promise.resolve();
  const env: Environment = {
    tools: (task) => setup.env.tools(task),
    start: (task, rng) => {
      const mine = turn.then(() => new Promise((r) => setTimeout(r, delayMs)));
      turn = mine;
      return mine.then(() => setup.env.start(task, rng));
    },
  };
  return { ...setup, env };
}

describe("a run's state as polled through the API, against its record (issue 70 item 3)", () => {
  it(
    "matches the record at every poll of a three-minute run; the rollouts count moves every few seconds while it runs",
    async () => {
      const started = await fetch(`${api.url}/v1/experiments`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(request),
      });
      const body = await started.json();
      expect([started.status, body]).toEqual([202, expect.objectContaining({ id: expect.any(String) })]);
      const { id } = body;
      const planned = plannedRollouts(ExperimentRequest.parse(request), DEFAULT_QUOTE_BASIS);
      const run = runExperimentJob(id, {
        experiments,
        clock: deps.clock,
        meter: deps.meter,
        steps: deps.experimentSteps,
        prepare: async () => slowSetup(Math.round(RUN_MS / planned)),
      });
      const polls: { at: number; state: string; label: string; rollouts: number | undefined }[] = [];
      for (let ended = false; !ended; ) {
        await new Promise((r) => setTimeout(r, 1_000));
        const before = (await experiments.get(id))!;
        const shown = await getJson(`${api.url}/v1/experiments/${id}`, key);
        const after = (await experiments.get(id))!;
        const view = (r: typeof before) => [r.status, r.progress.label, r.progress.done, r.progress.rollouts];
        expect([view(before), view(after)]).toContainEqual([
          shown.status,
          shown.progress.label,
          shown.progress.done,
          shown.progress.rollouts,
        ]);
        // A label never behind its state.
        if (shown.status === "running") expect(shown.progress.label).toMatch(/^running: /);
        if (shown.status !== "running") expect(shown.progress.label).not.toMatch(/^running: /);
        polls.push({
          at: Date.now(),
          state: shown.status,
          label: shown.progress.label,
          rollouts: shown.progress.rollouts,
        });
        ended = ["done", "failed", "stopped", "cancelled"].includes(shown.status);
      }
      await run;
      const running = polls.filter((p) => p.state === "running");
      expect(running.at(-1)!.at - running[0]!.at).toBeGreaterThan(RUN_MS * 0.7);
      // The count moved at least every few seconds (three progress writes) while it ran.
      let last = running[0]!;
      for (const p of running) {
        if (p.rollouts !== last.rollouts) last = p;
        expect(p.at - last.at, `${p.label} at ${p.at}`).toBeLessThanOrEqual(3 * EXPERIMENT_PROGRESS_MS + 1_500);
      }
      expect(new Set(running.map((p) => p.label.replace(/ \(\d+ rollouts? so far\)$/, ""))).size).toBeGreaterThan(2);
      expect(polls.at(-1)).toMatchObject({ state: "done", label: "done" });
    },
    RUN_MS * 3,
  );
});
