import { z } from "zod";
import { CallerRescue } from "../callers/caller-rescue.ts";
import { ResampleEvidence } from "../callers/caller-adaptive.ts";
import { Id, Name } from "../names.ts";
import { DEFAULT_TOP_K, MAX_TOP_K, TopK } from "../voting/top-k.ts";

export const RescueRequest = z
  .object({
    poolId: Id,
    /** A task of the service's own task source; with `caller`, the caller's task (its id) instead. */
    taskId: Id.optional(),
    /** The failed group's failure tags (what the router reads); may be empty only with `harnesses`. */
    failureTags: z.array(Name).max(50).default([]),
    failedEvents: z.array(z.string().max(100)).max(100).default([]),
    k: TopK.default(DEFAULT_TOP_K),
    rolloutsPerHarness: z.number().int().min(1).max(32).default(2),
    /** Rescue with the caller's own policy endpoint and environment, the task given as data. */
    caller: CallerRescue.optional(),
    /**
     * Run exactly these harnesses of the pool instead of routing (H0's id for a trainer's base
     * group); `k` is then ignored and no vote is cast.
     */
    harnesses: z.array(Id).min(1).max(MAX_TOP_K).optional(),
    /**
     * "router" (or absent): run the router's Top-k. "adaptive": after routing, spend the same rollouts where
     * more successes are expected (the Top-k, split by the choice; H0 again; or nothing, then no
     * rescue starts), by Thompson draws from each option's posterior; the answer says which and why.
     */
    mode: z.enum(["router", "adaptive"]).optional(),
    /** With mode "adaptive": what your own H0 resamples of all-fail groups found so far (the H0 option's evidence). */
    resampleEvidence: ResampleEvidence.optional(),
  })
  .refine((r) => r.taskId !== undefined || r.caller !== undefined, {
    path: ["taskId"],
    message: "name a task of the service (taskId) or give the caller's own (caller.task)",
  })
  .refine((r) => r.mode !== "adaptive" || r.harnesses === undefined, {
    path: ["mode"],
    message: "an adaptive rescue routes: name no harnesses",
  })
  .refine((r) => r.failureTags.length > 0 || r.harnesses !== undefined, {
    path: ["failureTags"],
    message: "a rescue is routed by the failed group's failure tags: give at least one (or name the harnesses to run)",
  });
export type RescueRequest = z.infer<typeof RescueRequest>;

/**
 * The rollouts a rescue runs: `rolloutsPerHarness` for each harness it runs (those it names, else
 * the router's Top-k). The quote counts them before routing; the job, routed (`harnesses`: the
 * chosen ones), records and sends exactly as many.
 *
 * @example
 * rescueRollouts({ k: 2, rolloutsPerHarness: 3 }); // 6
 */
export function rescueRollouts(req: {
  k: number;
  rolloutsPerHarness: number;
  harnesses?: readonly string[] | undefined;
}): number {
  return (req.harnesses?.length ?? req.k) * req.rolloutsPerHarness;
}
