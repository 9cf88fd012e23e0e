import { addOutcome, type Profile } from "./profile.ts";
import type { UsageSink } from "../billing/usage.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import { harnessIds } from "../harness/pool.ts";
import type { Payer } from "../messaging/envelope.ts";
import { evidenceEnvelopes, type EvidenceReport, type ProfileEvidenceBody } from "./evidence-messages.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import type { PoolStore } from "../harness/pool-store.ts";

/**
 * Applies `update` to one harness's profile at most once per message id, atomically: a
 * redelivered message changes nothing, and a crash between read and write loses nothing.
 */
export interface ProfileLedger {
  /** `current` is the stored profile, or an empty one at policy version 0. */
  applyOnce(
    messageId: string,
    poolId: string,
    harnessId: string,
    update: (current: Profile) => Profile,
  ): Promise<"applied" | "duplicate">;
}

/** The profile use-case behind the `profile` worker: one reported outcome, applied once. */
export function applyEvidence(
  messageId: string,
  body: ProfileEvidenceBody,
  ledger: ProfileLedger,
): Promise<"applied" | "duplicate"> {
  return ledger.applyOnce(messageId, body.poolId, body.harnessId, (current) =>
    addOutcome(current, body, { rescueOf: body.rescueOf, taskTags: body.taskTags }),
  );
}

/**
 * `POST /v1/profiles/evidence`: outcomes an external trainer observed, checked against the pool
 * (every harness id must be one of its harnesses) and queued for the `profile` worker, one
 * envelope per outcome id (so a client's retry is applied once).
 *
 * @example
 * const { queued } = await reportEvidence(report, { pools, evidence: profileQueue });
 */
export async function reportEvidence(
  report: EvidenceReport,
  deps: { pools: Pick<PoolStore, "get">; evidence: MessageQueue },
  payer?: Payer,
  used?: UsageSink,
): Promise<{ queued: number }> {
  const pool = await deps.pools.get(report.poolId);
  if (!pool) throw new NotFoundError("pool", report.poolId);
  const known = new Set(harnessIds(pool));
  const unknown = report.outcomes.flatMap((o, i) =>
    known.has(o.harnessId)
      ? []
      : [`outcomes.${i}.harnessId: pool ${pool.id} has no harness ${JSON.stringify(o.harnessId)}`],
  );
  if (unknown.length) throw new ValidationError("request body", unknown);
  await deps.evidence.send(evidenceEnvelopes(report, payer));
  // Each outcome reported is metered as one rollout the caller ran.
  used?.({ rollouts: report.outcomes.length });
  return { queued: report.outcomes.length };
}
