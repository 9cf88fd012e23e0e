import { describe, expect, it } from "vitest";
import { systemClock, type Rollout, type TrajectoryStep } from "@harness-s/core";
import { TokenPolicy, TokenPolicyClient } from "@harness-s/adapters";
import { embeddedToolSchemas } from "@harness-s/envs";

const policy = new TokenPolicy(new TokenPolicyClient("http://127.0.0.1:1", { clock: systemClock }), {
  policyId: "unit",
  baseModel: "tiny",
  lora: { rank: 4, alpha: 8, targets: ["q_proj"] },
  seed: 1,
  system: "s",
  toolSchemas: embeddedToolSchemas,
});
const observation = { family: "app", tools: ["list", "submit"], event: "start", facts: [], taskTags: [], hints: [], baseHints: [], failedActions: [], turnsLeft: 3 };
const step = (over: Partial<TrajectoryStep>): TrajectoryStep => ({ observation, action: "list", logProb: -1, forced: false, intercepted: false, result: "ok", ...over });
const rollout = (steps: TrajectoryStep[]): Rollout => ({ id: "r", taskId: "t", family: "app", harnessId: "h", policyVersion: 0, seed: 1, steps, reward: 1, success: true, failureTags: [], events: [], behaviours: {} });
const settings = (maskIntercepted: boolean) => ({ learningRate: 0.1, clipEpsilon: 0.2, klCoef: 0, epochs: 1, rescueContext: "as-generated" as const, maskIntercepted });

describe("TokenPolicy datums", () => {
  const steps = [
    step({ tokens: { promptIds: [1, 2, 3], completionIds: [10, 11], logprobs: [-0.5, -0.6], version: 0 } }),
    step({ intercepted: true, result: "blocked:list", tokens: { promptIds: [4], completionIds: [12, 13, 14], logprobs: [-1, -1, -1], version: 0 } }),
    step({ forced: true, action: "submit", logProb: 0 }),
  ];

  it("trains on the sampled ids only: prompts and tool results 0, intercepted turns 0 when masked, forced turns absent", () => {
    // Act
    const [d] = policy.datums({ baseVersion: 0, samples: [{ rollout: rollout(steps), advantage: 0.5 }], settings: settings(true) });
    // Assess
    expect(d!.ids).toEqual([1, 2, 3, 10, 11, 4, 12, 13, 14]);
    expect(d!.loss_mask).toEqual([0, 0, 0, 1, 1, 0, 0, 0, 0]);
    expect(d!.behaviour_logprobs).toEqual([0, 0, 0, -0.5, -0.6, 0, -1, -1, -1]);
    expect(d!.advantage).toBe(0.5);
  });

  it("keeps intercepted turns in the loss when masking is off, and leaves out a sample with nothing sampled", () => {
    const [d] = policy.datums({ baseVersion: 0, samples: [{ rollout: rollout(steps), advantage: 1 }], settings: settings(false) });
    expect(d!.loss_mask).toEqual([0, 0, 0, 1, 1, 0, 1, 1, 1]);
    expect(policy.datums({ baseVersion: 0, samples: [{ rollout: rollout([steps[2]!]), advantage: 1 }], settings: settings(true) })).toEqual([]);
  });

  it("refuses to re-score a rescue in H0's context, which needs re-rendering", () => {
    expect(() => policy.datums({ baseVersion: 0, samples: [{ rollout: rollout(steps), advantage: 1 }], settings: { ...settings(true), rescueContext: "base" } })).toThrow(/as-generated/);
  });
});
