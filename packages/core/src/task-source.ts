import type { Task } from "./task.ts";

/** Where the dispatch worker finds the task a rollout is for (the embedded suite, a benchmark's index). */
export interface TaskSource {
  get(taskId: string): Promise<Task | undefined>;
}
