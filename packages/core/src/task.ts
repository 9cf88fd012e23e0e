import { z } from "zod";
import { Trigger } from "./harness/spec.ts";

export const Split = z.enum(["train", "dev", "heldout"]);
export type Split = z.infer<typeof Split>;

/**
 * What a run evaluates in the `heldout` slot: the test split (unseen combinations, never used for
 * tuning), or under "validation" train-side tasks held back for tuning (no test task is built).
 */
export const Protocol = z.enum(["test", "validation"]);
export type Protocol = z.infer<typeof Protocol>;

/**
 * One problem an agent must solve. `tags` are visible to the router and the policy;
 * `requirements` are latent (only the environment reads them); `cues` are hints that the
 * task's own instruction gives under every harness, H0 included.
 *
 * @example
 * Task.parse({ id: "app-3", family: "app", split: "train", instruction: "List open orders", tags: ["list"] });
 */
export const Task = z.object({
  id: z.string().min(1),
  family: z.string().min(1),
  split: Split,
  instruction: z.string(),
  tags: z.array(z.string()).default([]),
  requirements: z.array(z.string()).default([]),
  cues: z.array(Trigger).default([]),
  params: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).default({}),
});
export type Task = z.infer<typeof Task>;

/** What the router and Rank-1 inference may see of a task: no latent requirements. */
export const TaskView = z.object({
  id: z.string().min(1),
  family: z.string().min(1),
  tags: z.array(z.string()).default([]),
  instruction: z.string().optional(),
});
export type TaskView = z.infer<typeof TaskView>;

export function viewOf(task: Task): TaskView {
  return { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction };
}
