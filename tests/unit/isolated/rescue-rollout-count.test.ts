import { describe, expect, it, vi } from "vitest";
import { createPool, systemClock } from "@harness-s/core";
import { PriceList, Prices } from "@harness-s/core/billing";
import { DEFAULT_QUOTE_BASIS, quote } from "@harness-s/core/quoting";
import { statisticalVoters } from "@harness-s/core/voting";
import { RescueRequest, startRescue } from "@harness-s/core/rescue";
import {
  MemoryDecisionStore,
  MemoryPoolStore,
  MemoryProfileStore,
  MemoryQueue,
  MemoryRescueJobStore,
} from "@harness-s/adapters/stores";
import { idleCallerPolicies, makeSpec, makeTask } from "../../factories.ts";

// Issue 53, item 2: a rescue's rollout count has one definition, `rescueRollouts`. The quote
// counts with it before routing, the job records and sends as many once routed. Below it is
// redefined once (`redefined`) and quote, job and messages all follow.
const redefined = vi.hoisted(() => ({
  count: undefined as undefined | ((harnesses: number, perHarness: number) => number),
}));
vi.mock("../../../packages/core/src/rescue/rescue-request.ts", async (original) => {
  const real = await original<typeof import("../../../packages/core/src/rescue/rescue-request.ts")>();
  return {
    ...real,
    rescueRollouts: (req: Parameters<typeof real.rescueRollouts>[0]) =>
      redefined.count
        ? redefined.count(req.harnesses?.length ?? req.k, req.rolloutsPerHarness)
        : real.rescueRollouts(req),
  };
});

const prices = { tariff: Prices.parse({}), priceList: PriceList.parse({}) };
const directions = ["contract", "recon", "pre-action", "recovery", "loop-breaking", "verification"] as const;
const siblings = directions.map((direction, i) => makeSpec({ id: `sib-${i}`, provenance: { direction } }));
const task = makeTask({ id: "t1" });
const callers = idleCallerPolicies(3);
const callerRescue = {
  endpoint: "mine",
  environment: { kind: "builtin", id: "embedded" },
  task: { id: "t1", family: "app", tools: [{ name: "submit", submit: true }] },
};

async function started(input: Record<string, unknown>) {
  const pools = new MemoryPoolStore();
  await pools.put(createPool("p", makeSpec({ id: "h0" }), siblings));
  const dispatch = new MemoryQueue();
  let n = 0;
  const deps = {
    pools,
    profiles: new MemoryProfileStore(),
    decisions: new MemoryDecisionStore(),
    voters: statisticalVoters,
    clock: systemClock,
    newId: () => `d${++n}`,
    tasks: { get: async (id: string) => (id === task.id ? task : undefined) },
    jobs: new MemoryRescueJobStore(),
    dispatch,
    callers,
  };
  const req = RescueRequest.parse({ poolId: "p", taskId: "t1", failureTags: ["incomplete-results"], ...input });
  const job = await startRescue(req, deps, "k1");
  return { req, job, sent: dispatch.take() };
}

const grid = [1, 2, 3, 5].flatMap((k) =>
  [1, 2, 4].flatMap((rolloutsPerHarness) =>
    [
      { k, rolloutsPerHarness },
      { k, rolloutsPerHarness, caller: callerRescue },
      { rolloutsPerHarness, harnesses: siblings.slice(0, k).map((s) => s.id) },
    ].map((input) => ({
      name: `${"harnesses" in input ? "named" : "caller" in input ? "caller" : "service"} k=${k} per harness=${rolloutsPerHarness}`,
      input,
    })),
  ),
);

describe("a rescue's rollout count, one definition for the quote and the job", () => {
  it.each(grid)("quote = job's expected slots = messages sent ($name)", async ({ input }) => {
    const { req, job, sent } = await started(input);
    const quoted = quote({ rescue: req }, DEFAULT_QUOTE_BASIS, prices).rollouts;
    expect(job.expected).toBe(quoted);
    expect(sent.map((m) => (m.type === "rollout.requested" ? m.body.index : -1))).toEqual([...Array(quoted).keys()]);
    expect(quoted).toBe(
      ((input as { k?: number }).k ?? (input as { harnesses: string[] }).harnesses.length) * input.rolloutsPerHarness,
    );
  });

  it("changed once, in rescueRollouts, the quote, the job and its messages all follow", async () => {
    redefined.count = (harnesses, perHarness) => harnesses * (perHarness + 1);
    try {
      const { req, job, sent } = await started({ k: 2, rolloutsPerHarness: 3 });
      expect(quote({ rescue: req }, DEFAULT_QUOTE_BASIS, prices).rollouts).toBe(8);
      expect(job.expected).toBe(8);
      // Each chosen harness runs a block of 4 consecutive slots.
      const harnessOf = sent.map((m) => (m.type === "rollout.requested" ? m.body.harnessId : ""));
      expect(harnessOf).toEqual([...Array(4).fill(job.chosen[0]), ...Array(4).fill(job.chosen[1])]);
    } finally {
      redefined.count = undefined;
    }
  });
});
