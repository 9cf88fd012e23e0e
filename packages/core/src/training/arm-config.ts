import { z } from "zod";
import { RESCUE_MODES, type RescueModeName } from "./rescue-modes.ts";
import { UpdateSettings } from "../rollout/update-settings.ts";

/**
 * What an arm changes of the training config's update settings (an arm that trains rescued rows in H0's context,
 * corrected).
 */
export const ArmUpdate = UpdateSettings.pick({ rescueContext: true, rescueCorrection: true }).partial();
export type ArmUpdate = z.infer<typeof ArmUpdate>;

/** The registered rescue modes (see {@link RESCUE_MODES}). */
export const RescueMode = z.enum(Object.keys(RESCUE_MODES) as [RescueModeName, ...RescueModeName[]]);
export type RescueMode = z.infer<typeof RescueMode>;

/** One training arm. All arms of a seed share the batch order and evaluation seeds. */
export const ArmConfig = z.object({
  name: z.string().min(1),
  rescue: RescueMode,
  /** For "resample-h0": extra H0 rollouts allowed (set per seed to what harness-s spent). */
  extraBudget: z.number().int().min(0).optional(),
  reanchor: z.boolean().default(true),
  /** Voter ids to use; empty means every configured voter. */
  voters: z.array(z.string()).default([]),
  /** Update settings this arm sets over the training config's. */
  update: ArmUpdate.default({}),
});
export type ArmConfig = z.infer<typeof ArmConfig>;
