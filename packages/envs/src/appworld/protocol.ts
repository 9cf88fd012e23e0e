import { z } from "zod";

/**
 * AppWorld's environment server (`appworld serve environment`): one live task per process.
 * Answers come as `{output: …}`; each schema takes the unwrapped value.
 */
const wrapped = <S extends z.ZodType>(inner: S) =>
  z.object({ output: inner }).transform((o) => (o as { output: z.infer<S> }).output);

export const InitializeRequest = z
  .object({ task_id: z.string().min(1).max(200), experiment_name: z.string().min(1).max(200) })
  .strict();
export type InitializeRequest = z.infer<typeof InitializeRequest>;
/** The task's instruction and its supervisor (the person the agent acts for). */
export const Initialized = wrapped(
  z.looseObject({ instruction: z.string().max(100_000), supervisor: z.looseObject({}).optional() }),
);

export const ExecuteRequest = z.object({ task_id: z.string().min(1), code: z.string().max(100_000) }).strict();
/** What the executed code printed, or its error. */
export const Executed = wrapped(z.string().max(1_000_000));

export const Evaluation = wrapped(
  z.looseObject({
    success: z.boolean(),
    passes: z.array(z.unknown()),
    failures: z.array(z.unknown()),
    num_tests: z.number().int().min(0),
  }),
);
export type Evaluation = z.infer<typeof Evaluation>;

/** Whether the agent marked the task completed (`apis.supervisor.complete_task`). */
export const TaskCompleted = wrapped(z.boolean());
