import { z } from "zod";
import { Direction } from "../harness/spec.ts";
import { Name } from "../names.ts";
import { CallerRescue, CallerTask } from "../callers/caller-rescue.ts";
import { CallerUrl, SecretHeader } from "../outbound/caller-url.ts";

/** What one key may ask of an evolution through the API: each bound is a 400 naming the field when passed. */
export const POOL_EVOLUTION_LIMITS = {
  devTasks: 50,
  directions: 8,
  rounds: 5,
  candidatesPerRound: 8,
  trials: 4,
  poolSize: 8,
  maxTurns: 50,
  /** Rollouts one evolution may spend in all (H0's measurement included). */
  maxRollouts: 5_000,
  defaultMaxRollouts: 500,
  /** Attempts before a job fails: a worker lost mid-run starts it again from H0's measurement. */
  attempts: 3,
  /**
   * Evolutions one key may have queued or running at once (a 429 CONCURRENCY_LIMIT past it): one
   * holds a coordinator invocation from its start to its end, so a key holds at most this many of
   * `COORDINATOR_CONCURRENCY`, and other keys' experiments and evolutions keep their places.
   */
  activePerKey: 2,
} as const;

/** Where a key's evolutions in flight are counted (the meter's slots; `#` is never in a key's id). */
export const evolutionSlotKey = (keyId: string): string => `#evolving:${keyId}`;
const L = POOL_EVOLUTION_LIMITS;

const unique = <T>(items: readonly T[]) => new Set(items).size === items.length;
const int = (min: number, max: number) => z.number().int().min(min).max(max);

/**
 * How hard to search: directions, rounds, proposals per round, paired trials per dev task, the pool's size and a
 * rollout cap.
 */
export const PoolEvolveSettings = z.strictObject({
  directions: z
    .array(Direction.exclude(["base"]))
    .min(1)
    .max(L.directions)
    .refine(unique, "directions must not repeat")
    .default(["recovery", "contract", "recon", "loop-breaking", "budget"]),
  rounds: int(1, L.rounds).default(2),
  candidatesPerRound: int(1, L.candidatesPerRound).default(3),
  trials: int(1, L.trials).default(2),
  poolSize: int(1, L.poolSize).default(4),
  /** Dev tasks a sibling must repair (beat H0 on by `repairMargin`) to be kept. */
  minRepairs: int(1, L.devTasks).default(1),
  repairMargin: z.number().min(0).max(1).default(0.5),
  maxRollouts: int(1, L.maxRollouts).default(L.defaultMaxRollouts),
});
export type PoolEvolveSettings = z.infer<typeof PoolEvolveSettings>;

/**
 * `POST /v1/pools` with `{"evolve": …}`: a sibling pool evolved from the caller's H0 (its system
 * text and each dev task's tools with their descriptions) on the caller's dev tasks, in the
 * caller's OpenEnv environment, sampled at the caller's registered policy endpoint at one weight
 * version (the endpoint's when the job is asked for, or `weightVersion`): the service's own
 * policy cannot act in an arbitrary tool environment, so the caller's policy probes each
 * candidate sibling. The pool is the key's own.
 */
export const PoolEvolveRequest = CallerRescue.pick({
  endpoint: true,
  system: true,
  maxTokens: true,
  weightVersion: true,
  servedModel: true,
}).extend({
  /** A label kept with the pool (its id is the job's). */
  name: Name.optional(),
  environment: z.strictObject({ kind: z.literal("openenv"), url: CallerUrl, secretHeader: SecretHeader.optional() }),
  devTasks: z
    .array(CallerTask)
    .min(2)
    .max(L.devTasks)
    .refine((tasks) => unique(tasks.map((t) => t.id)), "dev task ids must not repeat"),
  /** H0's turn budget: the longest episode. */
  maxTurns: int(1, L.maxTurns).default(10),
  evolution: PoolEvolveSettings.default(PoolEvolveSettings.parse({})),
  /** A cap on the charge at the tariff: a quote above it is refused (402) before any work. */
  budget: z.strictObject({ usd: z.number().positive().max(1e6) }).optional(),
});
export type PoolEvolveRequest = z.infer<typeof PoolEvolveRequest>;

/**
 * The most rollouts an evolution runs: H0's measurement and every candidate's (dev tasks ×
 * trials each), within its rollout cap. Proposals that are refused or repeat cost nothing, so
 * a run usually spends less.
 *
 * @example
 * plannedEvolutionRollouts({ devTasks: [a, b, c], evolution: { directions: ["recovery"], rounds: 1, candidatesPerRound: 2, trials: 1, maxRollouts: 500 } }); // 9
 */
export function plannedEvolutionRollouts(req: {
  devTasks: readonly unknown[];
  evolution: Pick<PoolEvolveSettings, "directions" | "rounds" | "candidatesPerRound" | "trials" | "maxRollouts">;
}): number {
  const e = req.evolution;
  const perMeasurement = req.devTasks.length * e.trials;
  return Math.min(e.maxRollouts, perMeasurement * (1 + e.directions.length * e.rounds * e.candidatesPerRound));
}

/**
 * The evolution an experiment on a caller's environment runs first when it names no pool: the default search of `POST
 * /v1/pools`, on the run's dev split, within what the run's rollout cap leaves.
 */
export const FIRST_EVOLUTION: PoolEvolveSettings = PoolEvolveSettings.parse({});

/**
 * The most rollouts that first evolution runs ({@link plannedEvolutionRollouts} of {@link FIRST_EVOLUTION} on `devTasks`
 * dev tasks), within `capLeft` rollouts: the same figure the job caps itself at and the quote prices.
 */
export const firstEvolutionRollouts = (devTasks: number, capLeft = Number.POSITIVE_INFINITY): number =>
  Math.min(
    capLeft,
    plannedEvolutionRollouts({ devTasks: { length: devTasks } as readonly unknown[], evolution: FIRST_EVOLUTION }),
  );
