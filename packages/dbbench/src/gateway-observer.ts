import { failedCallEvent, type EventObserver, type ObserverFactory } from "@harness-s/core/gateway";
import { MUTATION_TYPES, isMutation, type DbBenchRow } from "./data.ts";
import { errorClass } from "./engines/engine.ts";
import { answerFacts, firstArg, schemaPreview } from "./environment.ts";

/** A server error as DBBench's tool prints it: MySQL's `errno (state): …`, SQLite's, or a failed execution. */
const SQL_ERROR = /^(\d{4} \([0-9A-Z]{5}\):|SQLite execution error:|Error executing query:)/;
const READS = /^\s*(select|with|show|describe|desc|explain)\b/i;
const SCHEMA = /information_schema|^\s*(show|describe|desc)\b/i;

/**
 * DBBench's events and facts read from what an agent's `execute_sql` printed, as the gateway
 * sees it (the same names `DbBenchEnvironment` gives from the server's own answer):
 * `sql:error:<class>`, `sql:rows`, `sql:empty`, `sql:ok`; facts `queried`, `queried-empty`,
 * `mutated`, `schema-inspected`. When the task id is a row of `rows`, the schema preview and the
 * commit gate's answer check use the row; otherwise a task tagged INSERT, UPDATE or DELETE is a
 * mutation.
 *
 * @example
 * const observerFor = dbbenchObserver(new Map(rows.map((r) => [r.id, r])));
 */
export function dbbenchObserver(rows: ReadonlyMap<string, DbBenchRow> = new Map()): ObserverFactory {
  return (task): EventObserver => {
    const row = rows.get(task.id);
    const mutation = row ? isMutation(row) : task.tags.some((t) => (MUTATION_TYPES as readonly string[]).includes(t));
    return {
      observe(action, args, text) {
        const failed = failedCallEvent(action);
        if (failed) return { event: failed, facts: [] };
        if (action !== "execute_sql") return { event: "error:unknown-tool", facts: [] };
        const sql = String(firstArg(args) ?? "");
        if (SQL_ERROR.test(text)) return { event: `sql:error:${errorClass(text)}`, facts: [] };
        const empty = text.trim() === "[]" || text === "No response from database.";
        if (empty && !READS.test(sql)) return { event: "sql:ok", facts: ["mutated"] };
        if (empty) return { event: "sql:empty", facts: ["queried-empty"] };
        return { event: "sql:rows", facts: ["queried", ...(SCHEMA.test(sql) ? ["schema-inspected"] : [])] };
      },
      inspectSubmit: (args) => answerFacts(args, mutation),
      ...(row ? { preview: async (name: string) => (name === "schema" ? schemaPreview(row) : undefined) } : {}),
    };
  };
}
