import type { EnvOutcome, EnvSession, EnvStep, Environment, Rng, Task } from "@harness-s/core";
import { columnNames, isMutation, type DbBenchRow } from "./data.ts";
import type { SqlEngine, SqlSession } from "./engines/engine.ts";
import { compareResults } from "./evaluate.ts";
import { pyRows } from "./python.ts";

/** The agent's tools: `submit` is AgentBench's `commit_final_answer`. */
export const DBBENCH_TOOLS = ["execute_sql", "submit"] as const;

const TOOL_CALL_ERROR = "Error: Failed to parse tool call. Tool call format is incorrect.";
const INVALID_FUNCTION = "Invalid function call. Please call a tool instead.";
const NO_TOOL_CALLS = "Internal error: No tool calls found despite finish reason.";
const looksLikeSql = (s: string) => /^\s*(select|insert|update|delete|with|create|drop|alter)\b/i.test(s);

/** AgentBench's `list(arguments.values())[0]`. */
export const firstArg = (args: Record<string, unknown> | undefined) => (args ? Object.values(args)[0] : undefined);

/** The "schema" preview of a row's tables: each table's columns and first rows. */
export function schemaPreview(row: DbBenchRow): string {
  return row.table
    .map((t) => {
      const cols = columnNames(t)
        .map((c) => `\`${c}\``)
        .join(", ");
      const sample = pyRows(t.table_info.rows.slice(0, 3));
      return `Table \`${t.table_name}\` (${t.table_info.rows.length} rows, every column TEXT): ${cols}\nFirst rows: ${sample}`;
    })
    .join("\n");
}

/**
 * What the commit gate knows of a submit: `answer:well-formed` for a list of plain values (any answer to a mutation).
 */
export function answerFacts(args: Record<string, unknown>, mutation: boolean): string[] {
  if (mutation) return ["answer:well-formed"];
  const answer = firstArg(args);
  const items = Array.isArray(answer) ? answer : answer === undefined ? [] : [answer];
  const ok =
    items.length > 0 &&
    items.every(
      (x) => (typeof x === "string" || typeof x === "number") && String(x).trim() !== "" && !looksLikeSql(String(x)),
    );
  return ok ? ["answer:well-formed"] : [];
}

/**
 * DBBench behind the core's environment port, with AgentBench's tool-calling protocol: each
 * rollout gets a fresh database from `engine`; `execute_sql` answers with the rows as Python
 * prints them (or the error, so the episode goes on), cut at 800 characters; `submit` grades the
 * answer (selects) or the table hash (mutations). Events name what happened for the harness:
 * `sql:rows`, `sql:empty`, `sql:ok`, `sql:error:<class>`, `error:tool-call`.
 *
 * @example
 * const env = new DbBenchEnvironment(rows, await MysqlEngine.start());
 * const rollout = await runEpisode(rowTask(rows[0]), dbbenchH0, 1, { env, policy });
 */
export class DbBenchEnvironment implements Environment {
  private readonly rows: Map<string, DbBenchRow>;

  constructor(
    rows: readonly DbBenchRow[],
    private readonly engine: SqlEngine,
  ) {
    this.rows = new Map(rows.map((r) => [r.id, r]));
  }

  tools(_task: Task): string[] {
    return [...DBBENCH_TOOLS];
  }

  async start(task: Task, _rng: Rng): Promise<EnvSession> {
    const row = this.rows.get(task.id);
    if (!row) throw new Error(`no DBBench row ${task.id} in this environment`);
    const db = await this.engine.open(row);
    return new DbBenchSession(row, db);
  }
}

class DbBenchSession implements EnvSession {
  readonly initial: EnvStep = { event: "start", facts: [], done: false, text: "" };
  private readonly facts = new Set<string>();
  private readonly errorClasses = new Set<string>();
  private statements = 0;
  private schemaFirst = false;
  private verifiedAfterChange = false;
  private finished?: EnvOutcome;

  constructor(
    private readonly row: DbBenchRow,
    private readonly db: SqlSession,
  ) {}

  async act(action: string, args?: Record<string, unknown>): Promise<EnvStep> {
    if (action === "invalid") return this.step("error:tool-call", TOOL_CALL_ERROR);
    if (action === "no-tool-call") return this.step("error:no-tool-call", NO_TOOL_CALLS);
    if (action !== "execute_sql") return this.step("error:unknown-tool", INVALID_FUNCTION);
    const sql = firstArg(args);
    if (typeof sql !== "string") return this.step("error:tool-call", TOOL_CALL_ERROR);
    let r: Awaited<ReturnType<SqlSession["execute"]>>;
    try {
      r = await this.db.execute(sql);
    } catch (err) {
      return this.step("sql:error:other", `Error executing query: ${(err as Error).message}`);
    }
    const first = this.statements++ === 0;
    if (r.kind === "error") {
      this.errorClasses.add(r.errorClass ?? "other");
      return this.step(`sql:error:${r.errorClass ?? "other"}`, r.text);
    }
    if (r.kind === "ok") {
      this.facts.add("mutated");
      this.verifiedAfterChange = false;
    } else {
      this.facts.add(r.rowCount > 0 ? "queried" : "queried-empty");
      if (this.facts.has("mutated")) this.verifiedAfterChange = true;
    }
    if (r.kind === "rows" && /information_schema|^\s*(show|describe|desc)\b/i.test(sql)) {
      this.facts.add("schema-inspected");
      if (first) this.schemaFirst = true;
    }
    return this.step(
      r.kind === "ok" ? "sql:ok" : r.rowCount > 0 ? "sql:rows" : "sql:empty",
      r.text || "No response from database.",
    );
  }

  private step(event: string, text: string): EnvStep {
    return { event, facts: [...this.facts], done: false, text };
  }

  async preview(name: string): Promise<string | undefined> {
    return name === "schema" ? schemaPreview(this.row) : undefined;
  }

  inspectSubmit(args: Record<string, unknown>): string[] {
    return answerFacts(args, isMutation(this.row));
  }

  async finish(reason: "submitted" | "budget-exhausted", args?: Record<string, unknown>): Promise<EnvOutcome> {
    if (this.finished) return this.finished;
    const type = this.row.type[0]!;
    const mutation = isMutation(this.row);
    let success = false;
    if (reason === "submitted") {
      success = mutation
        ? compareResults(await this.db.tablesHash(this.row.table), this.row.answer_md5 ?? "", type)
        : compareResults(firstArg(args) ?? null, this.row.label, type);
    }
    const failureTags = success ? [] : this.failureTags(reason, mutation, args);
    this.finished = {
      reward: success ? 1 : 0,
      success,
      failureTags,
      behaviours: {
        "queried-before-commit": this.facts.has("queried") || this.facts.has("queried-empty"),
        "verified-before-answer": mutation ? this.verifiedAfterChange : this.facts.has("queried"),
        "schema-first": this.schemaFirst,
        "schema-inspected": this.facts.has("schema-inspected"),
        "hit-sql-error": this.errorClasses.size > 0,
      },
    };
    return this.finished;
  }

  /**
   * Why a rollout failed, for profiles and the router: rounds exhausted, an empty or malformed
   * answer, a wrong one, a mutation never applied or applied wrongly, and each SQL error class hit.
   */
  private failureTags(
    reason: "submitted" | "budget-exhausted",
    mutation: boolean,
    args?: Record<string, unknown>,
  ): string[] {
    const answer = firstArg(args);
    const values = Array.isArray(answer)
      ? answer
      : answer === undefined || answer === null || answer === ""
        ? []
        : [answer];
    const outcome =
      reason === "budget-exhausted"
        ? "rounds-exhausted"
        : mutation
          ? this.facts.has("mutated")
            ? "wrong-table-state"
            : "mutation-not-applied"
          : values.length === 0
            ? "empty-answer"
            : answerFacts(args ?? {}, false).length === 0
              ? "answer-shape"
              : "wrong-answer";
    return [outcome, ...[...this.errorClasses].sort().map((c) => `sql-error:${c}`)];
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
