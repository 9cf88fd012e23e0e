import { z } from "zod";
import { RolloutRequestedBody } from "../dispatch/rollout-request.ts";
import { Profile } from "../profile/profile.ts";
import { HarnessSpec } from "../harness/spec.ts";
import { Id, Name, nameRecord } from "../names.ts";
import { TopK } from "../voting/top-k.ts";
import { CorrelationId, currentCorrelationId } from "../observability/correlation.ts";

/**
 * Every queue message is an envelope with a schema version, a type and an id that makes
 * processing idempotent (a redelivered message has the same id).
 */
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

/** One voter's ballot for one routing request; the vote worker stores it under (ballot key, voter). */
export const BallotRequestedBody = z.object({
  /** Content-addressed: the same request always has the same key, so a ballot is cast once. */
  ballotKey: z.string().min(1).max(300),
  decisionId: z.string().min(1).max(300),
  voterId: z.string().min(1),
  task: z.object({ id: z.string(), family: z.string(), tags: z.array(z.string()), instruction: z.string().optional() }),
  failureTags: z.array(z.string()),
  failedEvents: z.array(z.string()),
  /** The candidate harnesses themselves (pools differ per run and seed; specs are small). */
  candidates: z.array(HarnessSpec).min(1),
  /** The profiles the router saw (they change as a run re-anchors, so they travel with the request). */
  profiles: z.record(z.string(), Profile),
  k: TopK,
});
export type BallotRequestedBody = z.infer<typeof BallotRequestedBody>;

/** Run (or resume) one experiment; the coordinator claims it, so a redelivery is a no-op. */
export const ExperimentRequestedBody = z.object({ experimentId: z.string().min(1).max(200) });
export type ExperimentRequestedBody = z.infer<typeof ExperimentRequestedBody>;

/** Run one pool evolution (`POST /v1/pools` with `evolve`); the coordinator claims it, so a redelivery is a no-op. */
export const PoolEvolveRequestedBody = z.object({ evolutionId: z.string().min(1).max(200) });
export type PoolEvolveRequestedBody = z.infer<typeof PoolEvolveRequestedBody>;

/** Who pays for what a message costs to process: the key, and the job it is part of. */
export const Payer = z.object({ keyId: z.string().min(1).max(200), jobId: z.string().min(1).max(400).optional() }).strict();
export type Payer = z.infer<typeof Payer>;

/** How often one message may be put back to wait its turn (a key at its cap of rollouts running) before it is failed. */
export const MAX_DEFERRALS = 1_000;

const head = (idMax: number) => ({
  v: z.literal(1),
  id: z.string().min(1).max(idMax),
  payer: Payer.optional(),
  /** Times a worker put this message back to wait its turn (see `CALLER_ROLLOUT_FAIRNESS`). */
  deferrals: z.number().int().min(1).max(MAX_DEFERRALS).optional(),
  /** The request this message was sent on behalf of (its API log line's id); absent on messages sent before it existed. */
  correlationId: CorrelationId.optional(),
});

export const Envelope = z.discriminatedUnion("type", [
  z.object({ ...head(200), type: z.literal("profile.evidence"), body: ProfileEvidenceBody }),
  z.object({ ...head(400), type: z.literal("rollout.requested"), body: RolloutRequestedBody }),
  z.object({ ...head(400), type: z.literal("ballot.requested"), body: BallotRequestedBody }),
  z.object({ ...head(200), type: z.literal("experiment.requested"), body: ExperimentRequestedBody }),
  z.object({ ...head(200), type: z.literal("pool.evolve.requested"), body: PoolEvolveRequestedBody }),
]);
export type Envelope = z.infer<typeof Envelope>;

export type EnvelopeType = Envelope["type"];
export type EnvelopeOf<T extends EnvelopeType> = Extract<Envelope, { type: T }>;

/**
 * The one way to make a queue message: the current schema version, its type, its idempotency id,
 * who pays for processing it (the workers meter what it cost to that key and job), and the
 * correlation id of the work it is made in (`withCorrelationId`: an API request, a worker's record).
 *
 * @example
 * await queue.send([envelope("experiment.requested", `experiment:${id}`, { experimentId: id })]);
 */
export function envelope<T extends EnvelopeType>(type: T, id: string, body: EnvelopeOf<T>["body"], payer?: Payer): EnvelopeOf<T> {
  const correlationId = currentCorrelationId();
  return { v: 1, id, type, body, ...(payer ? { payer } : {}), ...(correlationId ? { correlationId } : {}) } as EnvelopeOf<T>;
}

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
  return report.outcomes.map(({ id, ...o }) => envelope("profile.evidence", `${report.poolId}:${id}`, { ...o, poolId: report.poolId }, payer));
}
