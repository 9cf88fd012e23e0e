import { describe, expect, it } from "vitest";
import { ArmConfig, TrainConfig, trainArm } from "@harness-s/core/training";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { makeTrainDeps } from "../factories.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const instance = await setup.instance(1);
const small = TrainConfig.parse({
  steps: 4,
  batchSize: 8,
  curveEvery: 2,
  curveTasks: 6,
  reanchorEvery: 2,
  reanchorBudget: 20,
});

const deps = (seed: number) => makeTrainDeps(setup, instance, setup.createPolicy(seed), seed);

describe("trainArm", () => {
  it("grpo spends exactly steps × batch × group rollouts and one update per step", async () => {
    // Prepare: count the updates the trainer asks for
    const d = deps(1);
    const inner = d.policy;
    let updates = 0;
    d.policy = {
      version: () => inner.version(),
      act: (o, r) => inner.act(o, r),
      update: (b) => {
        updates++;
        return inner.update(b);
      },
    };
    // Act
    const r = await trainArm(ArmConfig.parse({ name: "grpo", rescue: "none", reanchor: false }), small, d);
    // Assess
    expect(r.rollouts).toEqual({ train: 4 * 8 * 4, rescue: 0, resample: 0, reanchor: 0, total: 128 });
    expect(updates).toBe(4);
    expect(inner.version()).toBe(4);
    expect(r.curve.map((c) => c.step)).toEqual([0, 2, 4]);
  });

  it("harness-s rescues only all-fail groups, counts every rollout, and re-anchors within budget", async () => {
    const r = await trainArm(ArmConfig.parse({ name: "harness-s", rescue: "router" }), small, deps(1));
    expect(r.rescue.triggered).toBeGreaterThan(0);
    expect(r.rescue.triggered).toBe(r.rescue.allFailGroups);
    expect(r.rescue.replaced + r.rescue.dropped).toBe(r.rescue.triggered);
    expect(r.rollouts.rescue).toBe(r.rescue.triggered * small.groupSize);
    expect(r.rollouts.reanchor).toBeLessThanOrEqual(2 * small.reanchorBudget);
    expect(r.rollouts.total).toBe(r.rollouts.train + r.rollouts.rescue + r.rollouts.reanchor);
    expect(r.decisions.length).toBe(r.rescue.triggered);
    expect(r.utilities.map((u) => u.step)).toEqual([2, 4]);
  });

  it("grpo-budget resamples all-fail groups under H0 with exactly the extra rollouts it was given (whole groups, while all-fail groups last)", async () => {
    for (const extra of [0, 4, 10, 1000]) {
      const r = await trainArm(
        ArmConfig.parse({ name: "grpo-budget", rescue: "resample-h0", extraBudget: extra, reanchor: false }),
        small,
        deps(2),
      );
      expect(r.rescue.allFailGroups).toBeGreaterThan(0);
      expect(r.rollouts.resample).toBe(
        Math.min(Math.floor(extra / small.groupSize), r.rescue.allFailGroups) * small.groupSize,
      );
    }
  });

  it("the random arm records the siblings it chose in its step records, as the router arm does", async () => {
    for (const rescue of ["random", "router"] as const) {
      const d = deps(1);
      const records: { groups: { outcome: string; allFail: boolean; chosen?: string[] }[] }[] = [];
      const r = await trainArm(ArmConfig.parse({ name: `harness-s-${rescue}`, rescue }), small, {
        ...d,
        onStep: (_s, rec) => records.push(rec),
      });
      const rescued = records.flatMap((rec) => rec.groups.filter((g) => g.allFail));
      expect(rescued.length).toBe(r.rescue.triggered);
      expect(rescued.length).toBeGreaterThan(0);
      for (const g of rescued) {
        expect(g.chosen).toHaveLength(small.k);
        for (const id of g.chosen!) expect(instance.evolution.pool.siblings.map((s) => s.id)).toContain(id);
      }
    }
  });
});
