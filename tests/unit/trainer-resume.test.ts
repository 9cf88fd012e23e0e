import { describe, expect, it } from "vitest";
import { ArmConfig, TrainConfig, Trainer, TrainerState, trainArm, withoutDecisions } from "@harness-s/core/training";
import { ConflictError, type Policy } from "@harness-s/core";
import type { LogLinearPolicy } from "@harness-s/policy";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { makeTrainDeps } from "../factories.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const instance = await setup.instance(2);
const config = TrainConfig.parse({
  steps: 5,
  batchSize: 8,
  curveEvery: 2,
  curveTasks: 6,
  reanchorEvery: 2,
  reanchorBudget: 20,
  auditEvery: 2,
});
const harnessS = ArmConfig.parse({ name: "harness-s", rescue: "router" });

const depsFor = (policy: Policy) => makeTrainDeps(setup, instance, policy, 2);

/** What a store gives back: JSON, parsed again. */
const stored = (s: TrainerState) => TrainerState.parse(JSON.parse(JSON.stringify(s)));

/**
 * Trains one step per call, as a sliced worker would: each call builds a trainer from the state
 * `keep` made of the last step's (a fresh one the first time), runs one step and drops the
 * trainer. Returns the result, the calls and the last state.
 */
async function trainPausingEveryStep(policy: Policy, keep: (s: TrainerState) => TrainerState) {
  let state: TrainerState | undefined;
  let calls = 0;
  for (;;) {
    calls++;
    const trainer = state
      ? Trainer.resume(state, harnessS, config, depsFor(policy))
      : await Trainer.start(harnessS, config, depsFor(policy));
    await trainer.step();
    state = keep(trainer.state());
    if (trainer.done) return { result: trainer.result(), calls, state };
  }
}

describe("trainer checkpoints", () => {
  it("a run paused after every step and continued from its stored state equals the uninterrupted run", async () => {
    // Prepare
    const reference = setup.createPolicy(2) as LogLinearPolicy;
    const whole = await trainArm(harnessS, config, depsFor(reference));
    // Act: one step per call; the policy (at the endpoint) outlives each call, the state goes through JSON
    const policy = setup.createPolicy(2) as LogLinearPolicy;
    const { result, calls } = await trainPausingEveryStep(policy, stored);
    // Assess
    expect(calls).toBe(config.steps);
    expect(result).toEqual(whole);
    expect(policy.snapshot()).toEqual(reference.snapshot());
    expect(whole.rescue.triggered).toBeGreaterThan(0);
  });

  it("a state without its decisions stays small and continues like the full one (same audits, same policy)", async () => {
    // Prepare
    const reference = setup.createPolicy(2) as LogLinearPolicy;
    const whole = await trainArm(harnessS, config, depsFor(reference));
    // Act
    const policy = setup.createPolicy(2) as LogLinearPolicy;
    const sizes: number[] = [];
    const { result, state } = await trainPausingEveryStep(policy, (s) => {
      const kept = stored(withoutDecisions(s));
      sizes.push(kept.decisions.length);
      return kept;
    });
    // Assess: the decisions are counted, not kept; everything else (audits follow the decision count) is equal
    expect(sizes.every((n) => n === 0)).toBe(true);
    expect(state.decisionsOmitted).toBe(whole.decisions.length);
    expect(result.decisionsOmitted + result.decisions.length).toBe(whole.decisions.length);
    expect(whole.audits.length).toBeGreaterThan(1);
    expect({ ...result, decisions: [], decisionsOmitted: 0 }).toEqual({ ...whole, decisions: [], decisionsOmitted: 0 });
    expect(result.decisions).toEqual(whole.decisions.slice(result.decisionsOmitted));
    expect(policy.snapshot()).toEqual(reference.snapshot());
  });

  it("refuses to continue with a policy that is not at the saved version, or another arm's state", async () => {
    const trainer = await Trainer.start(harnessS, config, depsFor(setup.createPolicy(2)));
    await trainer.step();
    const state = stored(trainer.state());
    expect(state.step).toBe(1);
    expect(() => Trainer.resume(state, harnessS, config, depsFor(setup.createPolicy(2)))).toThrow(ConflictError);
    expect(() => Trainer.resume({ ...state, arm: "grpo" }, harnessS, config, depsFor(setup.createPolicy(2)))).toThrow(
      ConflictError,
    );
  });

  it("its live state is a TrainerState: the step count and done follow the steps, and the state parses", async () => {
    const trainer = await Trainer.start(harnessS, config, depsFor(setup.createPolicy(2)));
    expect([trainer.state().step, trainer.done]).toEqual([0, false]);
    for (let i = 1; i <= config.steps; i++) {
      const record = await trainer.step();
      expect(record.step).toBe(i);
      expect(TrainerState.safeParse(JSON.parse(JSON.stringify(trainer.state()))).success).toBe(true);
    }
    expect(trainer.done).toBe(true);
    expect(trainer.result()).toEqual(await trainArm(harnessS, config, depsFor(setup.createPolicy(2))));
  });
});
