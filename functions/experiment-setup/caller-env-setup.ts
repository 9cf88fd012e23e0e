import {
  BudgetExceededError,
  NotFoundError,
  ValidationError,
  createPool,
  createRng,
  hash32,
  parseHarnessSpec,
  rolloutsIn,
  type Environment,
  type PoolStore,
  type Task,
} from "@harness-s/core";
import { EvolutionFailedError } from "@harness-s/core/pools";
import {
  EvolutionConfig,
  evolvePool,
  givenPool,
  mutationProposer,
  type EvolutionResult,
} from "@harness-s/core/evolution";
import {
  rolloutFinished,
  type CallerExperimentEnv,
  type CallerExperimentTask,
  type ExperimentDeps,
  type ExperimentRecord,
  type TaskSplit,
} from "@harness-s/core/experiment";
import { FIRST_EVOLUTION, PoolEvolveRequest, firstEvolutionRollouts } from "@harness-s/core/pools";
import type { ProfileStore } from "@harness-s/core/profile";
import { actionOf, callerTaskOf } from "@harness-s/core/callers";
import { statisticalVoters } from "@harness-s/core/voting";
import { OpenEnvEnvironment } from "@harness-s/adapters/openenv";
import type { OutboundPolicy } from "@harness-s/adapters/net";
import type { FamilyRendering, OpenedFamily } from "@harness-s/envs";

type Setup = Omit<ExperimentDeps, "onProgress">;

/**
 * What a caller's environment is run with: the outbound guard, the stores its pool is read from, and how its policies
 * are made (at the stack's worker).
 */
export interface CallerEnvDeps {
  outbound: OutboundPolicy;
  pools: Pick<PoolStore, "get">;
  profiles: Pick<ProfileStore, "get">;
  /**
   * The setup with a language model's policies on the caller's tools (the worker's; a caller's environment has no
   * policy of its own).
   */
  withPolicy: (base: Setup, rendering: FamilyRendering) => Setup;
}

/** The system message a caller's episodes start with (the request carries tasks, not a system text). */
export const CALLER_EXPERIMENT_SYSTEM =
  "Solve the task with the tools offered; call the tool that commits your answer once you have it.";

/** H0's turn budget on a caller's environment: a pool evolution's default (`POST /v1/pools`). */
const CALLER_H0_TURNS = PoolEvolveRequest.shape.maxTurns.parse(undefined);

/** Where each split of the request goes in a run's task sets. */
const SLOT: Readonly<Record<TaskSplit, "train" | "dev" | "heldout">> = {
  train: "train",
  dev: "dev",
  "held-out": "heldout",
};

/** The one name the tasks' committing tools share (a token policy is shown one). */
export function submitToolName(tasks: readonly CallerExperimentTask[]): string {
  const names = [...new Set(tasks.map((t) => t.tools.find((tool) => tool.submit)!.name))];
  if (names.length !== 1)
    throw new ValidationError("env.tasks", [
      `every task's committing tool must have one name; these have ${names.join(", ")}`,
    ]);
  return names[0]!;
}

/** The caller's tasks by split, as the episode runner takes them. */
function taskSets(tasks: readonly CallerExperimentTask[]) {
  const sets = { train: [] as Task[], dev: [] as Task[], heldout: [] as Task[] };
  for (const t of tasks) sets[SLOT[t.split]].push({ ...callerTaskOf(t), split: SLOT[t.split] });
  return sets;
}

/**
 * Each task's episodes on the caller's server, with its own tools (through the outbound guard, the secret header sent
 * when a session opens).
 */
function callerEnvironment(env: CallerExperimentEnv, outbound: OutboundPolicy): Environment {
  const headers = env.secretHeader ? { [env.secretHeader.name]: env.secretHeader.value } : undefined;
  const byId = new Map(
    env.tasks.map((t) => [
      t.id,
      new OpenEnvEnvironment({
        url: env.url,
        outbound,
        tools: t.tools.map(actionOf),
        submit: t.tools.find((tool) => tool.submit)!.name,
        ...(headers ? { headers } : {}),
      }),
    ]),
  );
  const of = (task: Task) => {
    const found = byId.get(task.id);
    if (!found) throw new NotFoundError("task", task.id);
    return found;
  };
  return { tools: (task) => of(task).tools(task), start: (task, rng) => of(task).start(task, rng) };
}

/**
 * How a token policy is shown the caller's tools: each as the tasks declare it, the committing one under its own name.
 */
function callerRendering(tasks: readonly CallerExperimentTask[]): FamilyRendering {
  const byAction = new Map(tasks.flatMap((t) => t.tools.map((tool) => [actionOf(tool), tool] as const)).reverse());
  return {
    system: CALLER_EXPERIMENT_SYSTEM,
    toolSchemas: (offered) =>
      offered.flatMap((a) => {
        const t = byAction.get(a);
        return t
          ? [
              {
                type: "function" as const,
                function: { name: t.name, description: t.description, parameters: t.parameters },
              },
            ]
          : [];
      }),
    toolNames: { submit: submitToolName(tasks) },
    env: (base) => base,
  };
}

/**
 * The pool the request names: the key's own (another key's, or one of nobody's, is not found), with the profiles its
 * evolution measured.
 */
async function namedPool(
  poolId: string,
  keyId: string,
  deps: Pick<CallerEnvDeps, "pools" | "profiles">,
): Promise<EvolutionResult> {
  const pool = await deps.pools.get(poolId);
  if (!pool || pool.owner !== keyId) throw new NotFoundError("pool", poolId);
  return { ...givenPool(pool), initialProfiles: await deps.profiles.get(poolId) };
}

/**
 * A pool evolved first on the dev split, as `POST /v1/pools {evolve}` evolves one (the caller's H0,
 * the template proposer, the default search), each rollout a fresh policy of the run's model in
 * the caller's environment; its rollouts are the run's (billed, and within its rollout cap).
 */
async function evolvedPool(
  record: ExperimentRecord,
  sets: ReturnType<typeof taskSets>,
  tasks: readonly CallerExperimentTask[],
  setup: Setup,
): Promise<EvolutionResult> {
  const settings = FIRST_EVOLUTION;
  const cap = record.request.budget?.rollouts ?? Number.POSITIVE_INFINITY;
  // What the quote priced for it (packages/core/src/quoting/quotes.ts): the same bound.
  const left = firstEvolutionRollouts(sets.dev.length, cap - record.usage.rollouts);
  if (left < sets.dev.length * settings.trials)
    throw new BudgetExceededError(`budget cap of ${cap} rollouts leaves too few to evolve a pool on the dev split`);
  const policy = setup.createPolicy(0);
  const tools = (family: string) => [
    ...new Set(tasks.filter((t) => t.split === "dev" && t.family === family).flatMap((t) => t.tools.map(actionOf))),
  ];
  try {
    const result = await evolvePool(
      EvolutionConfig.parse({
        ...settings,
        maxRollouts: left,
        maxPerDirection: Math.max(1, Math.ceil(settings.poolSize / settings.directions.length)),
      }),
      {
        base: parseHarnessSpec({
          id: "h0",
          description: "the caller's H0: its tools as posted",
          budget: { maxTurns: CALLER_H0_TURNS },
          provenance: { direction: "base", proposer: "caller" },
        }),
        devTasks: sets.dev,
        proposer: mutationProposer,
        rng: createRng(hash32(record.id)),
        vocabulary: (family) => ({ tools: tools(family), facts: [], roles: {} }),
        runRollout: (task, spec, seed) => {
          record.usage.rollouts++;
          return rolloutsIn(setup.env, policy)(task, spec, seed).finally(() => rolloutFinished(record));
        },
      },
    );
    if (result.pool.siblings.length === 0)
      throw new EvolutionFailedError(
        `no sibling repaired a dev task H0 fails (${result.h0Failures.length} of ${sets.dev.length} failing, ${result.candidates.length} candidates kept): post more dev tasks, or name a pool evolved with POST /v1/pools`,
      );
    return {
      ...result,
      pool: {
        ...createPool(`${record.id}/pool`, result.pool.base, result.pool.siblings, result.pool.notes),
        owner: record.keyId,
      },
    };
  } finally {
    await (policy as { release?: () => Promise<void> }).release?.();
  }
}

/**
 * An experiment's setup on the caller's own OpenEnv server, its tasks posted as data: train, dev
 * and held-out from the tasks' splits, each episode on the server through the outbound guard with
 * the task's own tools, a language model's policies at the stack's worker; the pool it names (one
 * the key evolved on its dev split) or one evolved first on that split, frozen for every seed
 * (stored with the run under `<run>/pool/<seed>` by the coordinator).
 */
export async function callerEnvSetup(
  env: CallerExperimentEnv,
  record: ExperimentRecord,
  deps: CallerEnvDeps,
): Promise<OpenedFamily> {
  const sets = taskSets(env.tasks);
  const base: Setup = {
    env: callerEnvironment(env, deps.outbound),
    createPolicy: () => {
      throw new Error("a caller's environment trains a language model's policy");
    },
    voters: statisticalVoters,
    instance: async () => ({ ...sets, evolution: await evolution }),
  };
  const setup = deps.withPolicy(base, callerRendering(env.tasks));
  const evolution: Promise<EvolutionResult> = env.poolId
    ? namedPool(env.poolId, record.keyId, deps)
    : evolvedPool(record, sets, env.tasks, setup);
  // Awaited here: a pool that is not the key's, or an evolution that kept nothing, fails the run before any training.
  await evolution;
  return { base: setup, stop: async () => undefined };
}
