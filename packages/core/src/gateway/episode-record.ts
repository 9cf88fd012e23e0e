import { z } from "zod";
import { UpstreamTurn } from "./upstream-turn.ts";

/** A chat message as the gateway keeps it (`ChatMsg`). */
export const StoredMessage = z.object({
  role: z.enum(["system", "user", "assistant", "tool", "developer"]),
  content: z.string().nullable(),
  tool_calls: z
    .array(
      z.object({
        id: z.string(),
        type: z.literal("function"),
        function: z.object({ name: z.string(), arguments: z.string() }),
      }),
    )
    .optional(),
  tool_call_id: z.string().optional(),
});

/** One model turn as the episode recorded it (`RecordedTurn`). */
export const StoredTurn = z.object({
  turn: UpstreamTurn,
  action: z.string(),
  harnessNotes: z.array(z.string()),
  prompt: z.string(),
});

/** What one request was answered with (an upstream error is never stored: the step did not happen). */
export const StoredOut = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("reply"), turn: UpstreamTurn }),
  z.object({ kind: z.literal("forced-submit") }),
  z.object({ kind: z.literal("ended"), reason: z.enum(["budget-exhausted", "submitted"]) }),
]);
export type StoredOut = z.infer<typeof StoredOut>;

/**
 * One request that moved an episode on: the agent's messages it added (the first step: the whole
 * opening conversation), the model turns asked for while answering it, and the answer. Written
 * once, conditionally: two requests never both take step `n`.
 */
export const EpisodeStep = z.object({
  n: z.number().int().min(0),
  messages: z.array(StoredMessage),
  turns: z.array(StoredTurn),
  out: StoredOut,
  at: z.number(),
});
export type EpisodeStep = z.infer<typeof EpisodeStep>;

/** What a request needs to rebuild an episode by replaying its steps: everything but the steps. */
export const EpisodeMeta = z.object({
  keyId: z.string(),
  id: z.string(),
  opening: z.string(),
  poolId: z.string(),
  harnessId: z.string(),
  /** The harness's text added to the instruction (for the trajectory). */
  systemText: z.string(),
  decisionId: z.string(),
  task: z.object({ id: z.string(), family: z.string(), instruction: z.string(), tags: z.array(z.string()) }),
  tools: z.array(
    z.object({
      name: z.string(),
      action: z.string(),
      description: z.string(),
      parameters: z.record(z.string(), z.unknown()),
    }),
  ),
  submitTool: z.string(),
  seed: z.number().int(),
  startedAt: z.number(),
  lastUsed: z.number(),
  /** Steps written so far (the next request writes step `steps`). */
  steps: z.number().int().min(0),
  /** Set when the episode ended, failed or was closed; running otherwise (idle past the limit reads as closed). */
  status: z.enum(["running", "ended", "closed", "failed"]),
  reward: z.number().nullable(),
  /** Until when a request holds the episode (0: none): a second request waits for it or is refused. */
  leaseUntil: z.number(),
  leaseHolder: z.string().optional(),
  /** When the store may forget the episode (its TTL). */
  expiresAt: z.number(),
});
export type EpisodeMeta = z.infer<typeof EpisodeMeta>;

export interface StoredEpisode {
  meta: EpisodeMeta;
  steps: EpisodeStep[];
}

/**
 * Where gateway episodes live between requests, each key's apart (an episode's id means something
 * only to the key that opened it). Every write that moves an episode on is conditional, so any
 * number of API containers can serve one episode and two requests never both advance it.
 */
export interface GatewayEpisodeStore {
  /**
   * Stores a new episode with its first step; false when the key already has an episode of this id. The meta's
   * `expiresAt` is every item's.
   */
  create(meta: EpisodeMeta, first: EpisodeStep): Promise<boolean>;
  /** The key's episode with its steps in order, or undefined. */
  load(keyId: string, id: string): Promise<StoredEpisode | undefined>;
  /** The key's episodes that began with this opening (newest first, at most `limit`). */
  withOpening(keyId: string, opening: string, limit: number): Promise<StoredEpisode[]>;
  /**
   * Takes the episode for one request until `until` if no other request holds it (the request
   * that holds it may take it again); its step count then, or undefined when another holds it.
   */
  lease(keyId: string, id: string, holder: string, now: number, until: number): Promise<{ steps: number } | undefined>;
  /**
   * Writes step `step.n` and the meta's changes, releasing the lease, only if the episode has
   * exactly `step.n` steps; false otherwise (another request took that step).
   */
  append(
    keyId: string,
    id: string,
    step: EpisodeStep,
    change: Pick<EpisodeMeta, "status" | "lastUsed" | "expiresAt">,
  ): Promise<boolean>;
  /** Releases the lease without a step (the request failed: an upstream error, a crash of the harness). */
  release(keyId: string, id: string, holder: string): Promise<void>;
  /** Sets the meta's reward or status (the agent reported a reward; the episode idled out). */
  update(
    keyId: string,
    id: string,
    change: Partial<Pick<EpisodeMeta, "reward" | "status">>,
  ): Promise<EpisodeMeta | undefined>;
}
