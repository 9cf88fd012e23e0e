import { afterAll, describe, expect, inject, it } from "vitest";
import { ExperimentRequest, startExperiment } from "@harness-s/core/experiment";
import { NotConfiguredError, createPool, systemClock } from "@harness-s/core";
import { singlePolicyEndpoint } from "@harness-s/core/dispatch";
import { startLocalStack, type LocalStack, type LocalStackOptions } from "@harness-s/functions/local";
import { addKey, seedPool, startApi } from "../api-factory.ts";
import { makeSpec } from "../factories.ts";
import { blockingPrepare } from "../fixtures/blocking-prepare.ts";

// Issue 30, item 10: an experiment's CPU work must not stall another key's requests in a process
// that also serves the API. The coordinator's work is a 3 s busy loop here: run in process (as
// `serve` ran it before), a route request waits it out; on the workers' own thread (as `serve`
// runs it now, `workersOn`), it does not.
const BLOCK_MS = 3_000;
const stacks: LocalStack[] = [];
afterAll(async () => Promise.all(stacks.map((s) => s.stop())), 60_000);

/**
 * The longest the API went without answering a route request while the stack's coordinator was
 * busy (the gap between answers: this test's own requests share the thread with an in-process
 * stack, so a request's own latency would hide a block that began between two of them).
 */
async function worstRouteWhileBusy(opts: Pick<LocalStackOptions, "workersOn" | "policies" | "prepareExperiment">) {
  const stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async () => undefined },
    ...opts,
  });
  stacks.push(stack);
  await seedPool(
    stack.deps,
    createPool("p", makeSpec({ id: "h0", provenance: { direction: "base" } }), [
      makeSpec({ id: "s", provenance: { direction: "recovery" } }),
    ]),
    {},
  );
  const secret = await addKey(stack.deps, "k-route", ["route"]);
  const api = await startApi(stack.deps);
  try {
    const route = async () => {
      const t = performance.now();
      const res = await fetch(`${api.url}/v1/route`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
        body: JSON.stringify({ poolId: "p", task: { id: "t", family: "app" }, failureTags: ["x"], k: 1 }),
      });
      expect(res.status).toBe(200);
      return performance.now() - t;
    };
    await route();
    await startExperiment(ExperimentRequest.parse({ seeds: [1], arms: ["grpo"] }), "k-run", {
      experiments: stack.stores.experiments,
      coordinator: stack.queues.coordinator.queue,
      clock: systemClock,
      newId: () => "exp_block",
    });
    let last = performance.now();
    let worst = 0;
    for (const end = Date.now() + BLOCK_MS + 2_500; Date.now() < end; ) {
      await route();
      worst = Math.max(worst, performance.now() - last);
      last = performance.now();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await stack.stores.experiments.get("exp_block"))?.error).toBe("this stack only blocks");
    return worst;
  } finally {
    await api.close();
  }
}

describe("an experiment's work and the API's event loop (item 10)", () => {
  it("a busy coordinator on the workers' own thread leaves another key's requests prompt; in process, they wait it out", async () => {
    const inProcess = await worstRouteWhileBusy({
      policies: singlePolicyEndpoint(() => Promise.reject(new NotConfiguredError("no rollouts here"))),
      prepareExperiment: blockingPrepare(BLOCK_MS),
    });
    const offThread = await worstRouteWhileBusy({
      workersOn: { module: new URL("../fixtures/blocking-workers.mjs", import.meta.url), data: { blockMs: BLOCK_MS } },
    });
    expect(inProcess).toBeGreaterThan(BLOCK_MS / 2);
    expect(offThread).toBeLessThan(1_000);
  }, 90_000);
});
