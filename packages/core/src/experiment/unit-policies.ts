import { z } from "zod";
import type { Policy } from "../ports.ts";
import { TrainerState } from "../training/train-state.ts";

/** Where a unit's policy lives: a fresh one per (unit, attempt), or the one a checkpoint names. */
export interface UnitPolicies {
  create(unit: string, seed: number): Promise<{ id: string; policy: Policy }>;
  /**
   * The policy with this id, at whatever version it is now; where the endpoint lost it (a
   * restarted worker), restored from what {@link persist} saved at `version`; undefined if
   * neither is there.
   */
  attach(id: string, seed: number, version?: number): Promise<Policy | undefined>;
  /**
   * Saves the policy where a fresh endpoint can restore it; called after each training step, before the step's
   * checkpoint is recorded.
   */
  persist?(id: string): Promise<void>;
  /** Frees a unit's policy once its results are saved (an endpoint holds it until then). */
  release?(id: string): Promise<void>;
}

/** An (arm, seed) unit part-way through training: its policy's id and the trainer's state. */
export const UnitCheckpoint = z.object({
  arm: z.string(),
  seed: z.number().int(),
  policyId: z.string(),
  state: TrainerState,
});
export type UnitCheckpoint = z.infer<typeof UnitCheckpoint>;

/**
 * The unit's policy and, where its checkpoint's policy is still at the saved version, the state
 * to continue from; otherwise a fresh policy (the unit starts over).
 *
 * @example
 * const { id, policy, resumeFrom } = await unitPolicy(deps, "harness-s", 3);
 */
export async function unitPolicy(
  deps: {
    policies?: UnitPolicies;
    createPolicy: (seed: number) => Policy;
    resume?: { units?: readonly UnitCheckpoint[] };
  },
  arm: string,
  seed: number,
): Promise<{ id?: string; policy: Policy; resumeFrom?: TrainerState }> {
  if (!deps.policies) return { policy: deps.createPolicy(seed) };
  const saved = deps.resume?.units?.find((u) => u.arm === arm && u.seed === seed);
  const attached = saved ? await deps.policies.attach(saved.policyId, seed, saved.state.policyVersion) : undefined;
  if (saved && attached && attached.version() === saved.state.policyVersion)
    return { id: saved.policyId, policy: attached, resumeFrom: saved.state };
  if (saved && attached) await deps.policies.release?.(saved.policyId); // moved past its checkpoint: the unit starts over
  return deps.policies.create(`${arm}/${seed}`, seed);
}
