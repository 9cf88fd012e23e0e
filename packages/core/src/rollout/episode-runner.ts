import type { HarnessSpec } from "../harness/spec.ts";
import type { Environment, Policy, RolloutRunner } from "../ports.ts";
import type { Task } from "../task.ts";
import { runEpisode } from "./run-episode.ts";

/**
 * What a port hands back for one episode: the environment it runs in, the policy that acts, and what to do once it ends
 * (ended or failed).
 */
export interface EpisodeParts {
  env: Environment;
  policy: Omit<Policy, "update">;
  ended?: () => void;
}

/**
 * The one place an episode is run: a rollout runner whose every episode is run by core
 * ({@link runEpisode}) from the parts `partsFor` hands back for it (an adapter's policy and
 * environment, made fresh per episode where it keeps per-episode state), `ended` told after.
 *
 * @example
 * const run = episodeRunner(() => ({ env, policy: sampler() }));
 */
export function episodeRunner(
  partsFor: (task: Task, harness: HarnessSpec, seed: number) => EpisodeParts | Promise<EpisodeParts>,
): RolloutRunner {
  return async (task, harness, seed) => {
    const parts = await partsFor(task, harness, seed);
    try {
      return await runEpisode(task, harness, seed, parts);
    } finally {
      parts.ended?.();
    }
  };
}

/** Every episode in `env`, acted by `policy`. */
export const rolloutsIn = (env: Environment, policy: Omit<Policy, "update">): RolloutRunner =>
  episodeRunner(() => ({ env, policy }));
