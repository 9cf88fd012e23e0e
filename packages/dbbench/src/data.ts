import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ValidationError, formatIssues, type Task } from "@harness-s/core";
import { PyFloatLiteral, parseJsonPy } from "./json-py.ts";
import { pyFloat } from "./python.ts";

export const Split = z.enum(["standard", "dev"]);
export type Split = z.infer<typeof Split>;

export const MUTATION_TYPES = ["INSERT", "UPDATE", "DELETE"] as const;
export const SELECT_TYPES = [
  "other",
  "counting",
  "comparison",
  "ranking",
  "aggregation-SUM",
  "aggregation-MIN",
  "aggregation-MAX",
  "aggregation-AVG",
] as const;
export const RowType = z.enum([...MUTATION_TYPES, ...SELECT_TYPES]);
export type RowType = z.infer<typeof RowType>;

const Cell = z.union([z.string(), z.number(), z.boolean(), z.null(), z.instanceof(PyFloatLiteral)]);
export const DbTable = z.object({
  table_name: z.string().min(1),
  table_info: z.object({
    columns: z.array(z.object({ name: z.string(), type: z.string().optional() })).min(1),
    rows: z.array(z.array(Cell.transform(cellText))),
  }),
});
export type DbTable = z.infer<typeof DbTable>;

/** One DBBench row (AgentBench's format; `sql.query` is not used for grading). */
export const DbBenchRow = z.object({
  description: z.string(),
  label: z.array(z.union([z.string(), z.number(), z.instanceof(PyFloatLiteral)]).transform(cellText)),
  table: z.union([DbTable, z.array(DbTable).min(1)]).transform((t) => (Array.isArray(t) ? t : [t])),
  type: z.array(RowType).min(1),
  add_description: z.string().default(""),
  evidence: z.string().default(""),
  answer_md5: z.string().optional(),
});
export type DbBenchRow = z.infer<typeof DbBenchRow> & { id: string; index: number; split: Split };

/** Python's `str(col)` of a JSON cell, as AgentBench inserts it. */
export function cellText(v: z.infer<typeof Cell>): string {
  if (v instanceof PyFloatLiteral) return pyFloat(v.value);
  if (v === null) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  return String(v);
}

export const isMutation = (row: Pick<DbBenchRow, "type">) =>
  (MUTATION_TYPES as readonly string[]).includes(row.type[0]!);

/**
 * Loads a split; every row is validated and gets a stable id (`<split>-<line index>`).
 *
 * @example
 * const rows = await loadSplit(BUNDLED_DATA_DIR, "dev"); // 60 rows
 */
export async function loadSplit(dir: string, split: Split): Promise<DbBenchRow[]> {
  const text = await readFile(join(dir, `${split}.jsonl`), "utf8");
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((line, index) => {
      const parsed = DbBenchRow.safeParse(parseJsonPy(line));
      if (!parsed.success) throw new ValidationError(`${split}.jsonl row ${index}`, formatIssues(parsed.error.issues));
      return { ...parsed.data, id: `${split}-${index}`, index, split };
    });
}

/** AgentBench's user prompt for a row. */
export function rowPrompt(row: DbBenchRow): string {
  let p = "";
  if (row.evidence) p += `Evidence about the question: ${row.evidence}\n`;
  if (row.add_description) p += `Additional table information about the question: ${row.add_description}\n`;
  return `${p}Question: ${row.description}\n`;
}

/** A row as a core task (family "dbbench"); the row itself stays with the environment. */
export function rowTask(row: DbBenchRow): Task {
  // The type is also the task's latent "combination", so an experiment's evaluation reports accuracy per type.
  return {
    id: row.id,
    family: "dbbench",
    split: "train",
    instruction: rowPrompt(row),
    tags: [row.type[0]!],
    requirements: [row.type[0]!],
    cues: [],
    params: {},
  };
}

/**
 * Column names as created: an empty name becomes `column_<n>` and a repeated one gets `_<k>`
 * (AgentBench's CREATE TABLE fails on both, so such rows could never be solved there; the
 * table hash does not depend on names, so grading is unchanged).
 */
export function columnNames(table: DbTable): string[] {
  const seen = new Map<string, number>();
  return table.table_info.columns.map((c, i) => {
    const base = c.name.trim() === "" ? `column_${i + 1}` : c.name;
    const n = (seen.get(base.toLowerCase()) ?? 0) + 1;
    seen.set(base.toLowerCase(), n);
    return n === 1 ? base : `${base}_${n}`;
  });
}

/** The DBBench data shipped with this package (AgentBench, Apache-2.0; see data/SOURCE.md). */
export const BUNDLED_DATA_DIR = new URL("../data/", import.meta.url).pathname;
