import { describe, expect, it } from "vitest";
import { createRng, type PolicyObservation, type UpdateSettings } from "@harness-s/core";
import { LogLinearPolicy, featuresOf } from "@harness-s/policy";
import { rememberedFeatureNames } from "../../packages/policy/src/weight-index.ts";
import { makeRollout } from "../factories.ts";

const tools = ["search", "read_file", "edit_file", "run_tests", "submit"];
const observation = (event: string, facts: string[], tags: string[] = ["regression"]): PolicyObservation => ({
  family: "repair",
  tools,
  event,
  facts,
  taskTags: tags,
  hints: [],
  baseHints: [],
  failedActions: [],
  turnsLeft: 4,
});
const settings: UpdateSettings = {
  learningRate: 0.3,
  clipEpsilon: 0.2,
  klCoef: 0,
  epochs: 1,
  rescueContext: "as-generated",
  maskIntercepted: true,
};

/** The scoring as written before the dense rows: a softmax of Σ θ[feature|a], feature by feature in order. */
function naiveProbabilities(weights: Record<string, number>, obs: PolicyObservation): number[] {
  const logits = obs.tools.map((a) => featuresOf(obs).reduce((z, f) => z + (weights[`${f}|${a}`] ?? 0), 0));
  const max = Math.max(...logits);
  const exps = logits.map((z) => Math.exp(z - max));
  const total = exps.reduce((s, e) => s + e, 0);
  return exps.map((e) => e / total);
}

describe("the log-linear policy's weight index (names built once, rows laid out by tool)", () => {
  it("scores exactly as the sum over features in order, for random weights and observations", () => {
    const rng = createRng(11);
    const facts = ["located", "read", "edited", "verified"];
    const prior: Record<string, number> = {};
    for (const f of [
      "repair|bias",
      "repair|ev:start",
      "repair|ev:edited",
      "repair|has:read",
      "repair|has:edited",
      "repair|tag:regression",
    ])
      for (const a of tools) if (rng.next() < 0.7) prior[`${f}|${a}`] = (rng.next() - 0.5) * 7.3;
    const policy = new LogLinearPolicy({ prior });
    for (let i = 0; i < 50; i++) {
      const obs = observation(
        rng.next() < 0.5 ? "start" : "edited",
        facts.filter(() => rng.next() < 0.5),
      );
      expect(policy.probabilities(obs)).toEqual(naiveProbabilities(prior, obs));
    }
  });

  it("scores with the weights an update wrote, not a layout cached before it", async () => {
    const obs = observation("start", ["read"]);
    const policy = new LogLinearPolicy({
      prior: Object.fromEntries(featuresOf(obs).flatMap((f) => tools.map((a, j) => [`${f}|${a}`, j / 10]))),
    });
    const before = policy.probabilities(obs); // lays the rows out for these tools
    const choice = await policy.act(obs, createRng(3));
    const rollout = makeRollout({
      steps: [{ ...choice, forced: false, intercepted: false, result: "x", observation: obs }],
      success: true,
      reward: 1,
    });
    await policy.update({ baseVersion: 0, samples: [{ rollout, advantage: 1 }], settings });
    const after = policy.probabilities(obs);
    expect(after).not.toEqual(before);
    expect(after).toEqual(naiveProbabilities(policy.snapshot().weights, obs));
  });

  it("remembers at most 100,000 feature names, and names features correctly past that", () => {
    for (let i = 0; i < 100_500; i++) featuresOf(observation(`error:${i}`, []));
    expect(rememberedFeatureNames()).toBeGreaterThan(0);
    expect(rememberedFeatureNames()).toBeLessThanOrEqual(100_000);
    expect(featuresOf(observation("error:7", ["read"], ["ci-offline"]))).toEqual([
      "repair|bias",
      "repair|ev:error:7",
      "repair|has:read",
      "repair|tag:ci-offline",
    ]);
  });
});
