import { defaultAdvantageOptions, groupAdvantages } from "../grpo/advantage.ts";
import type { UpdateSample } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { TrainConfig } from "./config.ts";
import { UpdateSettings } from "../rollout/update-settings.ts";

/**
 * The update's samples: each group's rollouts with their group-relative advantages (see
 * `grpo/advantage.ts`), leaving out those with zero advantage (they carry no gradient).
 *
 * @example
 * const samples = buildSamples([[win, loss]], config); // [{ rollout: win, advantage: +a }, { rollout: loss, advantage: -a }]
 */
export function buildSamples(
  groups: readonly (readonly Rollout[])[],
  config: Pick<TrainConfig, "normalizeStd">,
): UpdateSample[] {
  const samples: UpdateSample[] = [];
  for (const group of groups) {
    const adv = groupAdvantages(
      group.map((r) => r.reward),
      { ...defaultAdvantageOptions, normalizeStd: config.normalizeStd },
    );
    group.forEach((rollout, i) => {
      if (adv[i] !== 0) samples.push({ rollout, advantage: adv[i]! });
    });
  }
  return samples;
}

/** The policy update's settings, read off the training config. */
export function updateSettings(config: TrainConfig): UpdateSettings {
  return UpdateSettings.parse(config);
}
