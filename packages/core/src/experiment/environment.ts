import { z } from "zod";
import { Id, Name } from "../names.ts";
import { CallerUrl, SecretHeader } from "../outbound/caller-url.ts";
import { CallerTask } from "../callers/caller-rescue.ts";

/**
 * The splits a caller's tasks are posted in: train (GRPO), dev (the pool's evolution and profiles), held-out (the
 * headline evaluation).
 */
export const TaskSplit = z.enum(["train", "dev", "held-out"]);
export type TaskSplit = z.infer<typeof TaskSplit>;

/** Bounds of a caller's environment posted with an experiment, declared once. */
export const CALLER_ENV_LIMITS = { tasks: 2_000, perSplitMin: 1 } as const;

/** One of the caller's tasks as data, with the split it belongs to. */
export const CallerExperimentTask = CallerTask.extend({ split: TaskSplit });
export type CallerExperimentTask = z.infer<typeof CallerExperimentTask>;

/**
 * An experiment on the caller's own OpenEnv-protocol server: its URL through the outbound guard,
 * its tasks as data in the three splits, and the pool to train with (one the key evolved on its dev
 * split, `POST /v1/pools`), or none (one is evolved first, frozen and stored with the run).
 */
export const CallerExperimentEnv = z.strictObject({
  kind: z.literal("openenv"),
  url: CallerUrl,
  secretHeader: SecretHeader.optional(),
  tasks: z
    .array(CallerExperimentTask)
    .min(3)
    .max(CALLER_ENV_LIMITS.tasks)
    .superRefine((tasks, ctx) => {
      for (const split of TaskSplit.options)
        if (tasks.filter((t) => t.split === split).length < CALLER_ENV_LIMITS.perSplitMin)
          ctx.addIssue({
            code: "custom",
            message: `no task in the ${split} split: each of train, dev and held-out needs one`,
          });
      const ids = new Set<string>();
      for (const t of tasks) {
        if (ids.has(t.id)) ctx.addIssue({ code: "custom", message: `task id ${t.id} appears twice` });
        ids.add(t.id);
      }
    }),
  poolId: Id.optional(),
});
export type CallerExperimentEnv = z.infer<typeof CallerExperimentEnv>;

/**
 * Where an experiment runs: a benchmark family this deployment runs by name (`embedded`, the
 * default; `dbbench`, `appworld`, `swe-gym`: checked against the registered families where the
 * request is taken), or the caller's own environment.
 */
export const ExperimentEnv = z.union([Name, CallerExperimentEnv]);
export type ExperimentEnv = z.infer<typeof ExperimentEnv>;

/** The name a run's environment is priced, registered and reported by: a family's, or `openenv` for a caller's. */
export const envName = (env: ExperimentEnv): string => (typeof env === "string" ? env : env.kind);

/** Dev tasks of a caller's environment that names no pool: the run evolves one on them first (else none). */
export function firstEvolutionTasks(env: ExperimentEnv | undefined): number | undefined {
  if (typeof env !== "object" || env.poolId !== undefined) return undefined;
  return env.tasks.filter((t) => t.split === "dev").length;
}
