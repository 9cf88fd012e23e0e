/**
 * What a plain `experiment` and `experiment --quick` run, in one place: the seeds when `--seeds`
 * is not given, the attempts per task in every evaluation, and the training config's overrides
 * (explicit `--train` and `--steps` win over the preset's).
 */
export const EXPERIMENT_PRESETS = {
  full: { seeds: [1, 2, 3, 4, 5], evalSamples: 6, train: {} },
  quick: { seeds: [1, 2, 3], evalSamples: 3, train: { steps: 10, curveEvery: 5, auditEvery: 4 } },
} as const satisfies Record<string, { seeds: readonly number[]; evalSamples: number; train: Record<string, number> }>;

export type ExperimentPreset = (typeof EXPERIMENT_PRESETS)[keyof typeof EXPERIMENT_PRESETS];

export const presetOf = (quick: boolean): ExperimentPreset =>
  quick ? EXPERIMENT_PRESETS.quick : EXPERIMENT_PRESETS.full;
