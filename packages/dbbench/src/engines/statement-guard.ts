/**
 * Which statements an agent may run in its rollout database, decided on the statement's own
 * tokens: comments, strings and quoted identifiers are skipped as the server's lexer skips them
 * (and MySQL's executable comments, `/*! … *\/` and `/*M! … *\/`, are read as code, as the
 * server reads them), so no comment, case or whitespace trick hides the first keyword.
 */
export type Dialect = "mysql" | "sqlite";

/** The upper-cased bare words of `sql` in order, outside comments, strings and quoted identifiers. */
export function codeWords(sql: string, dialect: Dialect): string[] {
  const words: string[] = [];
  let i = 0;
  const n = sql.length;
  const skipQuoted = (close: string) => {
    i++;
    while (i < n) {
      if (sql[i] === "\\" && dialect === "mysql" && close !== "`") i += 2;
      else if (sql[i] === close && sql[i + 1] === close) i += 2;
      else if (sql[i] === close) return void i++;
      else i++;
    }
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === "-" && next === "-") i = lineEnd(sql, i);
    else if (c === "#" && dialect === "mysql") i = lineEnd(sql, i);
    else if (c === "/" && next === "*") {
      const executable = dialect === "mysql" && (sql[i + 2] === "!" || (sql[i + 2] === "M" && sql[i + 3] === "!"));
      if (executable) {
        i += sql[i + 2] === "!" ? 3 : 4;
        while (i < n && /\d/.test(sql[i]!)) i++;
      } else {
        const end = sql.indexOf("*/", i + 2);
        i = end < 0 ? n : end + 2;
      }
    } else if (c === "*" && next === "/" && dialect === "mysql") i += 2;
    else if (c === "'" || c === '"' || c === "`") skipQuoted(c);
    else if (c === "[" && dialect === "sqlite") {
      const end = sql.indexOf("]", i + 1);
      i = end < 0 ? n : end + 1;
    } else if (/[A-Za-z_]/.test(c)) {
      const start = i;
      while (i < n && /[\w$]/.test(sql[i]!)) i++;
      words.push(sql.slice(start, i).toUpperCase());
    } else i++;
  }
  return words;
}

function lineEnd(sql: string, from: number): number {
  const end = sql.indexOf("\n", from);
  return end < 0 ? sql.length : end + 1;
}

/**
 * Statement kinds the server has and a rollout may not run (settings, prepared and stored code,
 * files, locks, users, replication, server administration). A first word the server does not
 * know at all still goes to it, so a typo gets the server's own syntax error, as in AgentBench.
 */
const DENIED_FIRST: Record<Dialect, ReadonlySet<string>> = {
  sqlite: new Set(["ATTACH", "DETACH", "VACUUM", "PRAGMA"]),
  mysql: new Set([
    "SET",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "LOAD",
    "HANDLER",
    "KILL",
    "SHUTDOWN",
    "FLUSH",
    "INSTALL",
    "UNINSTALL",
    "LOCK",
    "UNLOCK",
    "GRANT",
    "REVOKE",
    "CALL",
    "DO",
    "BINLOG",
    "CHANGE",
    "RESET",
    "PURGE",
    "CACHE",
    "BACKUP",
    "USE",
    "XA",
    "SIGNAL",
    "RESIGNAL",
    "GET",
    "DECLARE",
    "OPTIMIZE",
    "REPAIR",
    "ANALYZE",
    "CHECK",
    "CHECKSUM",
    "STOP",
    "CONNECT",
    "RESTORE",
    "IMPORT",
  ]),
};

/** Words that reach outside the rollout's database or its limits wherever they stand. */
const NEVER: Record<Dialect, ReadonlySet<string>> = {
  sqlite: new Set(["ATTACH", "DETACH", "PRAGMA", "VACUUM", "LOAD_EXTENSION"]),
  mysql: new Set(["OUTFILE", "DUMPFILE", "LOAD_FILE", "INFILE", "MAX_STATEMENT_TIME"]),
};

const READS = new Set(["SELECT", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "VALUES", "TABLE"]);

/** What the sandboxes need to know of one statement, from one pass of {@link codeWords}. */
export interface Statement {
  /** The first keyword, upper-cased (undefined for an empty statement). */
  first?: string;
  /** Why it may not run in a rollout database, or undefined when it may. */
  refusal?: string;
  /** It only reads (its rows are the answer); anything else may write. */
  reads: boolean;
}

/**
 * Reads `sql` once: whether it may run in a rollout database (its first keyword is none of the
 * statement kinds a rollout may not run, and it names nothing on the never-list: files, the
 * statement time limit, extensions; `BEGIN NOT ATOMIC`, MariaDB's compound statement, and
 * SQLite's virtual tables are refused; stored code needs privileges a rollout user does not
 * have), and whether it only reads.
 *
 * @example
 * inspectStatement("/* x *\/ ATTACH DATABASE 'x.db' AS a", "sqlite").refusal; // "ATTACH is not allowed …"
 */
export function inspectStatement(sql: string, dialect: Dialect): Statement {
  const words = codeWords(sql, dialect);
  const first = words[0];
  const reads = first !== undefined && (READS.has(first) || (first === "WITH" && !words.some((w) => w === "INSERT" || w === "UPDATE" || w === "DELETE")));
  return { first, reads, refusal: first === undefined ? undefined : refusalOf(words, first, dialect) };
}

function refusalOf(words: string[], first: string, dialect: Dialect): string | undefined {
  const banned = words.find((w) => NEVER[dialect].has(w));
  if (banned) return `${banned} is not allowed in a rollout database`;
  if (DENIED_FIRST[dialect].has(first)) return `${first} statements are not allowed in a rollout database`;
  if (first === "START" && words[1] !== "TRANSACTION") return "only START TRANSACTION is allowed in a rollout database";
  if (first === "BEGIN" && words[1] === "NOT") return "compound statements are not allowed in a rollout database";
  if (first === "CREATE" && words.slice(1, 3).includes("VIRTUAL")) return "virtual tables are not allowed in a rollout database";
  return undefined;
}
