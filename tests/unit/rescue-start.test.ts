import { describe, expect, it } from "vitest";
import { createPool, systemClock } from "@harness-s/core";
import { RESCUE_SLOTS, RescueRequest, startRescue } from "@harness-s/core/rescue";
import type { CallerPolicies } from "@harness-s/core/dispatch";
import {
  MemoryDecisionStore,
  MemoryPoolStore,
  MemoryProfileStore,
  MemoryQueue,
  MemoryRescueJobStore,
  MemoryRescueSlots,
} from "@harness-s/adapters/stores";
import { statisticalVoters } from "@harness-s/core/voting";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { idleCallerPolicies, makeSpec } from "../factories.ts";

// Issue 54 (bench): a caller rescue's start asks its endpoint's version while it holds its slots
// (one round trip instead of two in a row), and a version that cannot be had lets the hold go.
const callerRescue = {
  endpoint: "mine",
  environment: { kind: "openenv", url: "https://env.example.com/" },
  task: { id: "t1", family: "app", tools: [{ name: "submit", submit: true }] },
};

async function stack(callers: CallerPolicies) {
  const pools = new MemoryPoolStore();
  await pools.put(
    createPool("p", makeSpec({ id: "h0" }), [makeSpec({ id: "sib-a", provenance: { direction: "contract" } })]),
  );
  const deps = {
    pools,
    profiles: new MemoryProfileStore(),
    decisions: new MemoryDecisionStore(),
    voters: statisticalVoters,
    clock: systemClock,
    newId: () => "d1",
    tasks: { get: async () => undefined },
    jobs: new MemoryRescueJobStore(),
    dispatch: new MemoryQueue(),
    rescueSlots: new MemoryRescueSlots(),
    callers,
  };
  const start = () =>
    startRescue(
      RescueRequest.parse({ poolId: "p", harnesses: ["h0"], rolloutsPerHarness: 3, caller: callerRescue }),
      deps,
      "k1",
    );
  return { deps, start };
}

/**
 * Caller policies whose version answers when `answer` is called (with a version, or an error); `asked` once it is
 * asked.
 */
function gatedVersion() {
  let answer: (v: number | Error) => void = () => undefined;
  let askedNow: () => void = () => undefined;
  const asked = new Promise<void>((r) => {
    askedNow = r;
  });
  const callers: CallerPolicies = {
    ...idleCallerPolicies(0),
    currentVersion: () =>
      new Promise<number>((resolve, reject) => {
        answer = (v) => (v instanceof Error ? reject(v) : resolve(v));
        askedNow();
      }),
  };
  return { callers, asked, answer: (v: number | Error) => answer(v) };
}

describe("a caller rescue's start", () => {
  it("holds its slots while its endpoint's version is asked, and records the version", async () => {
    const gated = gatedVersion();
    const { deps, start } = await stack(gated.callers);
    const started = start();
    await gated.asked;
    for (let i = 0; i < 20 && (await deps.rescueSlots.held("k1", Date.now())) === 0; i++)
      await new Promise((r) => setTimeout(r, 1));
    expect(await deps.rescueSlots.held("k1", Date.now())).toBe(3); // held before the version came back
    gated.answer(7);
    const job = await started;
    expect(job.caller?.weightVersion).toBe(7);
    expect(deps.dispatch.take()).toHaveLength(3);
  });

  it("lets its hold go when the version cannot be had: the version's error, nothing recorded or sent", async () => {
    const gated = gatedVersion();
    const { deps, start } = await stack(gated.callers);
    const started = start();
    await gated.asked;
    gated.answer(new StalePolicyVersionError(0, 7));
    await expect(started).rejects.toBeInstanceOf(StalePolicyVersionError);
    expect(await deps.rescueSlots.held("k1", Date.now())).toBe(0);
    expect(await deps.jobs.get("rsc_d1")).toBeUndefined();
    expect(deps.dispatch.take()).toHaveLength(0);
  });

  it("answers the version's error before a full key's 429, as the steps in a row did", async () => {
    const gated = gatedVersion();
    const { deps, start } = await stack(gated.callers);
    await deps.rescueSlots.hold(
      "k1",
      "other",
      RESCUE_SLOTS.perKey,
      RESCUE_SLOTS.perKey,
      Date.now(),
      Date.now() + 60_000,
    );
    const started = start();
    await gated.asked;
    gated.answer(new StalePolicyVersionError(0, 7));
    await expect(started).rejects.toBeInstanceOf(StalePolicyVersionError);
    const full = await stack(idleCallerPolicies(7));
    await full.deps.rescueSlots.hold(
      "k1",
      "other",
      RESCUE_SLOTS.perKey,
      RESCUE_SLOTS.perKey,
      Date.now(),
      Date.now() + 60_000,
    );
    await expect(full.start()).rejects.toMatchObject({ code: "CONCURRENCY_LIMIT" });
  });
});
