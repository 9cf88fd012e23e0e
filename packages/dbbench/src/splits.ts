import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ValidationError, formatIssues, hash32, type Protocol, type Task } from "@harness-s/core";
import { loadSplit, rowTask, type DbBenchRow } from "./data.ts";

/** How the fixed splits were drawn; written into `data/splits.json` beside the ids it chose. */
export const SPLIT_RULE =
  "held-out: a third of each type of standard.jsonl (ceil(n/3), the rows first in the order of hash32(id, seed)), never used for tuning, evidence or evolution; " +
  "train: the rest of standard.jsonl; validation (tuning only): a quarter of each type of train (ceil(n/4), the same order), evaluated in the held-out slot under the validation protocol; " +
  "dev: every row of dev.jsonl (evolution and profile evidence).";
export const SPLIT_SEED = 20261202;

export const DbSplits = z.object({
  rule: z.string(),
  seed: z.number().int(),
  train: z.array(z.string()),
  validation: z.array(z.string()),
  heldout: z.array(z.string()),
  dev: z.array(z.string()),
});
export type DbSplits = z.infer<typeof DbSplits>;

/** The first `ceil(n × share)` rows of each type, in the seeded order. */
function perType(rows: readonly DbBenchRow[], share: number, seed: number): Set<string> {
  const byType = new Map<string, DbBenchRow[]>();
  for (const r of rows) byType.set(r.type[0]!, [...(byType.get(r.type[0]!) ?? []), r]);
  const picked = new Set<string>();
  for (const group of byType.values()) {
    const ordered = [...group].sort((a, b) => hash32(a.id, seed) - hash32(b.id, seed) || (a.id < b.id ? -1 : 1));
    for (const r of ordered.slice(0, Math.ceil(group.length * share))) picked.add(r.id);
  }
  return picked;
}

/**
 * Draws the splits by {@link SPLIT_RULE} (deterministic: the bundled `splits.json` is this
 * function's output, and a test checks it still is).
 *
 * @example
 * const splits = drawSplits(standard, dev); // 100 held-out, 200 train (50 of them validation), 60 dev
 */
export function drawSplits(standard: readonly DbBenchRow[], dev: readonly DbBenchRow[], seed = SPLIT_SEED): DbSplits {
  const heldout = perType(standard, 1 / 3, seed);
  const train = standard.filter((r) => !heldout.has(r.id));
  const validation = perType(train, 1 / 4, seed);
  return {
    rule: SPLIT_RULE,
    seed,
    train: train.map((r) => r.id),
    validation: train.filter((r) => validation.has(r.id)).map((r) => r.id),
    heldout: standard.filter((r) => heldout.has(r.id)).map((r) => r.id),
    dev: dev.map((r) => r.id),
  };
}

/** The bundled splits, validated. */
export async function readSplits(dir: string): Promise<DbSplits> {
  const parsed = DbSplits.safeParse(JSON.parse(await readFile(join(dir, "splits.json"), "utf8")));
  if (!parsed.success) throw new ValidationError("splits.json", formatIssues(parsed.error.issues));
  return parsed.data;
}

/** DBBench as an experiment's task sets: every row a task in its split, and the rows by id for the environment. */
export interface DbTaskSets {
  train: Task[];
  dev: Task[];
  heldout: Task[];
  rows: DbBenchRow[];
}

/**
 * The task sets of a protocol: `test` trains on train and evaluates on held-out; `validation`
 * trains on train without its validation quarter and evaluates on that quarter (no held-out row
 * is loaded into any task set, so nothing tuned there can see one).
 *
 * @example
 * const { train, dev, heldout, rows } = await dbbenchTaskSets(BUNDLED_DATA_DIR, "test");
 */
export async function dbbenchTaskSets(dir: string, protocol: Protocol): Promise<DbTaskSets> {
  const [standard, dev, splits] = await Promise.all([
    loadSplit(dir, "standard"),
    loadSplit(dir, "dev"),
    readSplits(dir),
  ]);
  const byId = new Map(standard.map((r) => [r.id, r]));
  const pick = (ids: readonly string[], split: Task["split"]) =>
    ids.map((id) => ({ ...rowTask(byId.get(id)!), split }));
  const validation = new Set(splits.validation);
  const train = protocol === "test" ? splits.train : splits.train.filter((id) => !validation.has(id));
  const evalIds = protocol === "test" ? splits.heldout : splits.validation;
  const heldout = pick(evalIds, "heldout");
  const rows = [...dev, ...[...train, ...evalIds].map((id) => byId.get(id)!)];
  return {
    train: pick(train, "train"),
    dev: dev.map((r) => ({ ...rowTask(r), split: "dev" as const })),
    heldout,
    rows,
  };
}
