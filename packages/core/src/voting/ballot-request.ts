import { z } from "zod";
import { HarnessSpec } from "../harness/spec.ts";
import { Profile } from "../profile/profile.ts";
import { registerMessage } from "../messaging/envelope.ts";
import { TopK } from "./top-k.ts";

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

declare module "../messaging/envelope.ts" {
  interface MessageBodies {
    "ballot.requested": BallotRequestedBody;
  }
}
registerMessage("ballot.requested", BallotRequestedBody, 400);
