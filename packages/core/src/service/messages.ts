import { z } from "zod";

/**
 * Every queue message is an envelope with a schema version, a type and an id that makes
 * processing idempotent (a redelivered message has the same id).
 */
export const ProfileEvidenceBody = z.object({
  poolId: z.string().min(1),
  harnessId: z.string().min(1),
  family: z.string().min(1),
  success: z.boolean(),
  /** Failure tags of the H0 group this rollout tried to rescue (empty for plain evidence). */
  rescueOf: z.array(z.string()).default([]),
  taskTags: z.array(z.string()).default([]),
  turns: z.number().int().min(0),
  policyVersion: z.number().int().min(0),
  behaviours: z.record(z.string(), z.boolean()).default({}),
});
export type ProfileEvidenceBody = z.infer<typeof ProfileEvidenceBody>;

/** One rollout of an elastic rescue: job, slot, harness, task and seed. */
export const RolloutRequestedBody = z.object({
  jobId: z.string().min(1),
  index: z.number().int().min(0),
  poolId: z.string().min(1),
  harnessId: z.string().min(1),
  taskId: z.string().min(1),
  seed: z.number().int(),
});
export type RolloutRequestedBody = z.infer<typeof RolloutRequestedBody>;

export const Envelope = z.discriminatedUnion("type", [
  z.object({ v: z.literal(1), id: z.string().min(1).max(200), type: z.literal("profile.evidence"), body: ProfileEvidenceBody }),
  z.object({ v: z.literal(1), id: z.string().min(1).max(200), type: z.literal("rollout.requested"), body: RolloutRequestedBody }),
]);
export type Envelope = z.infer<typeof Envelope>;

/** `POST /v1/profiles/evidence`: outcomes an external trainer observed, each with its own id. */
export const EvidenceReport = z.object({
  poolId: z.string().min(1),
  outcomes: z
    .array(ProfileEvidenceBody.omit({ poolId: true }).extend({ id: z.string().min(1).max(200) }))
    .min(1)
    .max(500),
});
export type EvidenceReport = z.infer<typeof EvidenceReport>;

/** One envelope per outcome; the outcome's id makes redelivery and client retries idempotent. */
export function evidenceEnvelopes(report: EvidenceReport): Envelope[] {
  return report.outcomes.map(({ id, ...o }) => ({ v: 1 as const, id: `${report.poolId}:${id}`, type: "profile.evidence" as const, body: { ...o, poolId: report.poolId } }));
}
