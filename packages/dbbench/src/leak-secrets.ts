import { LeakIndex } from "@harness-s/core/evolution";
import { isMutation, type DbBenchRow } from "./data.ts";

const GENERIC = new Set(["none", "null", "true", "false", "nan", "yes", "no"]);

/**
 * What an evolved DBBench hint may not quote: each row's id, its answer values, its gold SQL
 * (a mutation's label) and the values in its tables.
 *
 * @example
 * const leaks = dbbenchLeakIndex(devRows);
 */
export function dbbenchLeakIndex(rows: readonly DbBenchRow[]): LeakIndex {
  return new LeakIndex(
    rows.map((r) => ({
      taskId: r.id,
      secrets: [
        ...r.label.map(String),
        ...(isMutation(r) ? r.label : []),
        ...r.table.flatMap((t) => t.table_info.rows.flat().map(String)),
      ].filter((v) => !GENERIC.has(v.trim().toLowerCase())),
    })),
  );
}
