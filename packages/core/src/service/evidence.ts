import { addOutcome, type Profile } from "../profile/profile.ts";
import type { ProfileEvidenceBody } from "./messages.ts";

/**
 * Applies `update` to one harness's profile at most once per message id, atomically: a
 * redelivered message changes nothing, and a crash between read and write loses nothing.
 */
export interface ProfileLedger {
  /** `current` is the stored profile, or an empty one at policy version 0. */
  applyOnce(messageId: string, poolId: string, harnessId: string, update: (current: Profile) => Profile): Promise<"applied" | "duplicate">;
}

/** The profile use-case behind the `profile` worker: one reported outcome, applied once. */
export function applyEvidence(messageId: string, body: ProfileEvidenceBody, ledger: ProfileLedger): Promise<"applied" | "duplicate"> {
  return ledger.applyOnce(messageId, body.poolId, body.harnessId, (current) => addOutcome(current, body, { rescueOf: body.rescueOf, taskTags: body.taskTags }));
}
