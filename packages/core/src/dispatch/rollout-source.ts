import { z } from "zod";
import { NotConfiguredError } from "../errors.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Datum } from "../protocol/v2.ts";
import {
  CallerRollout,
  type CallerEnvironment,
  type CallerRescue,
  type RolloutSpend,
} from "../callers/caller-rescue.ts";

/**
 * This service's own policy at its endpoint, by id (one per experiment arm; "default" serves the API), at the version
 * the requester saw.
 */
export const ServiceSource = z.strictObject({
  kind: z.literal("service"),
  policyId: z.string().min(1).max(200).default("default"),
  /** The policy version the requester saw; an endpoint holding another version refuses (retry). */
  version: z.number().int().min(0).optional(),
});
export type ServiceSource = z.infer<typeof ServiceSource>;

/** A caller's own policy endpoint, pinned at one weight version, in its environment, its task as data. */
export const CallerSource = CallerRollout.extend({ kind: z.literal("caller") });
export type CallerSource = z.infer<typeof CallerSource>;

/** Where a rollout samples its actions: the one thing a rollout message says about its policy. */
export const RolloutSource = z.discriminatedUnion("kind", [ServiceSource, CallerSource]);
export type RolloutSource = z.infer<typeof RolloutSource>;
export type SourceKind = RolloutSource["kind"];
export type SourceOf<K extends SourceKind> = Extract<RolloutSource, { kind: K }>;

/** Resolves a rollout's source to the runner that samples it. */
export interface SourceRunner<S extends RolloutSource = RolloutSource> {
  /**
   * A runner for `source`; refuses (rejects) one it cannot serve (an unknown policy, a version the
   * endpoint does not hold, a kind not deployed here). `onSpend` hears what each rollout spent at a
   * caller's policy and environment once it ends, failed or not.
   */
  runner(source: S, onSpend?: (spend: RolloutSpend) => void): Promise<RolloutRunner>;
}

/** Where the dispatch worker gets this service's own policies (the GPU endpoint in the cloud). */
export type PolicyEndpoints = SourceRunner<ServiceSource>;

/**
 * A stored rollout's token rows: one datum, or — where a turn's prompt did not extend the ids
 * before it (a chat template that rewrites earlier turns) — one per segment, each with its own
 * prompt (`segmented`). A rollout that trained no token has none.
 */
export interface RolloutRows {
  datums: Datum[];
  segmented: boolean;
}

/**
 * The caller's policies as rescues use them: a runner for one rescue's rollouts (its endpoint,
 * pinned at the rescue's weight version, in its environment), the token rows of stored rollouts
 * (as sampled, or re-rendered under H0 and re-scored at the endpoint), an endpoint's version now,
 * and the checks of an endpoint and an environment before a rescue starts.
 */
export interface CallerPolicies extends SourceRunner<CallerSource> {
  /** One entry per rollout, in order (undefined: no token of it trained). */
  datums(
    caller: CallerRollout,
    rollouts: readonly Rollout[],
    context: "sampled" | "base",
  ): Promise<(RolloutRows | undefined)[]>;
  currentVersion(keyId: string, endpoint: string): Promise<number>;
  /**
   * Refuses a rescue its endpoint cannot sample as asked (see `pinProblems`: a version and served model where replies
   * state no version) before any rollout is sent.
   */
  checkEndpoint(keyId: string, rescue: CallerRescue): Promise<void>;
  /**
   * Refuses an environment a rescue may not use (a URL the outbound guard refuses now, a built-in one not served here)
   * before any rollout is sent.
   */
  checkEnvironment(environment: CallerEnvironment): Promise<void>;
}

/** What a dispatch worker without a kind's runner answers its rollouts. */
const NOT_DEPLOYED: Record<SourceKind, string> = {
  service: "this dispatch worker samples no policy of the service's own",
  caller: "this dispatch worker runs no caller rescues",
};

/**
 * The one runner of every source: each kind's runner, registered by kind; a kind left out is
 * refused with NOT_CONFIGURED.
 *
 * @example
 * const runners = rolloutRunners({ service: new LocalPolicyEndpoints(env), caller: callers });
 * const run = await runners.runner({ kind: "service", policyId: "default" });
 */
export function rolloutRunners(kinds: { [K in SourceKind]?: SourceRunner<SourceOf<K>> }): SourceRunner {
  return {
    runner: async (source, onSpend) => {
      const kind = kinds[source.kind] as SourceRunner | undefined;
      if (!kind) throw new NotConfiguredError(NOT_DEPLOYED[source.kind]);
      return kind.runner(source, onSpend);
    },
  };
}
