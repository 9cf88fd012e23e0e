import { z } from "zod";
import { Task } from "../task.ts";
import { RolloutSource } from "./rollout-source.ts";
import { registerMessage } from "../messaging/envelope.ts";

/** One rollout of an elastic rescue or an experiment: job, slot, harness, task, seed and where it samples. */
export const RolloutRequest = z.strictObject({
  jobId: z.string().min(1),
  index: z.number().int().min(0),
  poolId: z.string().min(1),
  harnessId: z.string().min(1),
  taskId: z.string().min(1),
  seed: z.number().int(),
  /**
   * The policy that samples it, once: this service's own (id, version), or a caller's (endpoint, weight version,
   * environment, task).
   */
  source: RolloutSource,
  /**
   * The task itself, when the requester has one no worker can look up (an experiment's); otherwise a caller's own task,
   * or `taskId` looked up.
   */
  task: Task.optional(),
  /**
   * Part of a rescue job (`POST /v1/rescues`): the worker reads the job first (a cancelled one's slots are skipped, a
   * caller's budget held); an experiment's rollouts skip that read.
   */
  rescueJob: z.literal(true).optional(),
});

/**
 * A body queued before the rollout source existed (`policyId`, `policyVersion` and, for a caller's
 * rescue, `caller` beside them, no `source`), read as the source it named. One whose two versions
 * disagree is left as it is, and so refused (VALIDATION_FAILED: unrecognized keys, no source).
 * Such messages outlive a deploy by at most the dispatch queue's retention; this reader can go
 * with the release after the one that introduced `source`.
 */
function fromPreSourceShape(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null || "source" in raw) return raw;
  const { policyId, policyVersion, caller, ...rest } = raw as Record<string, unknown>;
  if (caller === undefined)
    return {
      ...rest,
      source: { kind: "service", policyId, ...(policyVersion === undefined ? {} : { version: policyVersion }) },
    };
  const weightVersion = (caller as { weightVersion?: unknown }).weightVersion;
  if (policyVersion !== undefined && policyVersion !== weightVersion) return raw;
  return { ...rest, source: { ...(caller as object), kind: "caller" } };
}

/** The `rollout.requested` message's body, as sent (see {@link RolloutRequest}); a pre-source body is read into it. */
export const RolloutRequestedBody = z.preprocess(fromPreSourceShape, RolloutRequest);
export type RolloutRequestedBody = z.infer<typeof RolloutRequest>;

declare module "../messaging/envelope.ts" {
  interface MessageBodies {
    "rollout.requested": RolloutRequestedBody;
  }
}
registerMessage("rollout.requested", RolloutRequestedBody, 400);
