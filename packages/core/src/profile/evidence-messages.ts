import { z } from "zod";
import { Id, Name, nameRecord } from "../names.ts";
import { envelope, registerMessage, type Envelope, type Payer } from "../messaging/envelope.ts";

/** What one observed outcome tells the profile worker (`profile.evidence`). */
export const ProfileEvidenceBody = z.object({
  poolId: Id,
  harnessId: Id,
  family: Name,
  success: z.boolean(),
  /** Failure tags of the H0 group this rollout tried to rescue (empty for plain evidence). */
  rescueOf: z.array(Name).max(50).default([]),
  taskTags: z.array(Name).max(50).default([]),
  turns: z.number().int().min(0).max(10_000),
  policyVersion: z.number().int().min(0),
  behaviours: nameRecord(z.boolean(), 50).default({}),
});
export type ProfileEvidenceBody = z.infer<typeof ProfileEvidenceBody>;

declare module "../messaging/envelope.ts" {
  interface MessageBodies {
    "profile.evidence": ProfileEvidenceBody;
  }
}
registerMessage("profile.evidence", ProfileEvidenceBody, 200);

/** `POST /v1/profiles/evidence`: outcomes an external trainer observed, each with its own id. */
export const EvidenceReport = z
  .object({
    poolId: Id,
    outcomes: z
      .array(ProfileEvidenceBody.omit({ poolId: true }).extend({ id: Id }).strict())
      .min(1)
      .max(500),
  })
  .strict();
export type EvidenceReport = z.infer<typeof EvidenceReport>;

/** One envelope per outcome; the outcome's id makes redelivery and client retries idempotent. */
export function evidenceEnvelopes(report: EvidenceReport, payer?: Payer): Envelope[] {
  return report.outcomes.map(({ id, ...o }) =>
    envelope("profile.evidence", `${report.poolId}:${id}`, { ...o, poolId: report.poolId }, payer),
  );
}
