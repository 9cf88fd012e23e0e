import { ExperimentConfig, runExperiment, type ExperimentSummary } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup, type EmbeddedSettings } from "./embedded.ts";
import { arm, paired, signed } from "./report/stats.ts";

export interface SweepPoint {
  axis: "cueRate" | "cueStrength";
  value: number;
  train: { mean: number; std: number; wins: number; n: number };
  heldout: { mean: number; std: number; wins: number; n: number };
}

export interface SweepResult {
  points: SweepPoint[];
  note: string;
  conclusion: string;
}

export const SWEEP_CUE_RATES = [0, 0.1, 0.2, 0.4, 0.7, 1];
export const SWEEP_CUE_STRENGTHS = [1, 2, 3, 4, 5, 6];

/**
 * The harness-s − grpo-budget advantage as H0 cues the latent requirements on more train tasks,
 * and as the policy's (fixed) cue-following strength changes. Every point re-evolves the pool
 * under its own setting, and grpo-budget gets the rollouts harness-s spent, seed by seed.
 */
export async function runSweep(
  base: ExperimentConfig,
  embedded: EmbeddedSettings,
  onPoint: (label: string, index: number, total: number) => void,
): Promise<SweepResult> {
  const settings: { axis: SweepPoint["axis"]; value: number; s: EmbeddedSettings }[] = [
    ...SWEEP_CUE_RATES.map((v) => ({ axis: "cueRate" as const, value: v, s: { ...embedded, cueRate: v } })),
    ...SWEEP_CUE_STRENGTHS.map((v) => ({ axis: "cueStrength" as const, value: v, s: { ...embedded, cueStrength: v } })),
  ];
  const points: SweepPoint[] = [];
  for (const [i, setting] of settings.entries()) {
    onPoint(`${setting.axis}=${setting.value}`, i, settings.length);
    const deps = embeddedSetup(setting.s);
    const summary: ExperimentSummary = await runExperiment(ExperimentConfig.parse({ ...base, arms: ["harness-s", "grpo-budget"] }), deps);
    const hs = arm(summary, "harness-s")!;
    const gb = arm(summary, "grpo-budget")!;
    const t = paired(hs, gb, "train.avgAt3");
    const h = paired(hs, gb, "heldout.avgAt3");
    points.push({ axis: setting.axis, value: setting.value, train: t, heldout: h });
  }
  const vanish = points.filter((p) => p.heldout.mean < 0.05 || p.heldout.wins < Math.ceil(p.heldout.n / 2));
  return {
    points,
    note: `Each row: paired over seeds ${base.seeds.join(", ")}, harness-s against budget-matched GRPO. cueRate = share of the train tasks with a silent, cuable requirement (pages, commit, tricky fix) whose own instruction cues it under H0 (default ${defaultEmbeddedSettings.cueRate}); cueStrength = the policy's fixed logit bonus for any hinted action, the task's cues and the siblings' hints alike (default ${defaultEmbeddedSettings.cueStrength}).`,
    conclusion: vanish.length
      ? `The advantage is below 5 held-out points (or not in most seeds) at: ${vanish.map((p) => `${p.axis}=${p.value} (${signed(p.heldout.mean)})`).join(", ")}. Rescue pays when H0 rarely cues the latent requirements and the policy follows the siblings' hints strongly enough for rescued groups to contain successes.`
      : "The advantage stays at or above 5 held-out points at every sweep point measured here.",
  };
}
