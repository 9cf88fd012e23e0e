import { readFile } from "node:fs/promises";
import { z } from "zod";
import { Task, ValidationError, formatIssues } from "@harness-s/core";

/**
 * Which AppWorld task ids an experiment uses in each slot (AppWorld's own splits: train, dev,
 * test_normal): `{ train: [...], dev: [...], heldout: [...] }`, with optional tags per id. The
 * instruction comes from the server when a task is initialised.
 */
export const AppWorldTaskFile = z.strictObject({
  train: z.array(z.string().min(1).max(200)).min(1).max(10_000),
  dev: z.array(z.string().min(1).max(200)).min(1).max(10_000),
  heldout: z.array(z.string().min(1).max(200)).min(1).max(10_000),
  tags: z.record(z.string(), z.array(z.string().max(80)).max(20)).default({}),
});
export type AppWorldTaskFile = z.infer<typeof AppWorldTaskFile>;

/** The tasks of Harness-S's local AppWorld-protocol server (packages/envs/fixtures/appworld). */
export const APPWORLD_FIXTURE_TASKS: AppWorldTaskFile = {
  train: ["todo_groceries", "todo_add_plumber"],
  dev: ["wallet_alice_total"],
  heldout: ["todo_open_work"],
  tags: {
    todo_groceries: ["todo", "paged-list", "change"],
    todo_add_plumber: ["todo", "change"],
    wallet_alice_total: ["wallet", "paged-list", "question"],
    todo_open_work: ["todo", "paged-list", "question"],
  },
};

/** The tasks of a task file, by slot. */
export function appworldTaskSets(file: AppWorldTaskFile): { train: Task[]; dev: Task[]; heldout: Task[] } {
  const task = (split: "train" | "dev" | "heldout") => (id: string) =>
    Task.parse({ id, family: "appworld", split, instruction: "", tags: file.tags[id] ?? [] });
  return {
    train: file.train.map(task("train")),
    dev: file.dev.map(task("dev")),
    heldout: file.heldout.map(task("heldout")),
  };
}

/** Reads a task file ({@link AppWorldTaskFile}), with every problem named. */
export async function readAppWorldTaskFile(path: string): Promise<AppWorldTaskFile> {
  const parsed = AppWorldTaskFile.safeParse(JSON.parse(await readFile(path, "utf8")));
  if (!parsed.success) throw new ValidationError(`AppWorld task file ${path}`, formatIssues(parsed.error.issues));
  return parsed.data;
}
