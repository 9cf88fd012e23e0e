/**
 * Which statements an agent may run in its rollout database, decided on the statement's own
 * tokens as the server reads them ({@link lexSql}): no comment, case or whitespace trick hides
 * the first keyword, and nothing the server runs as code is read here as a comment.
 */
import { type Dialect, lexSql, type SqlToken } from "./sql-lexer.ts";

export type { Dialect };

/**
 * The name a token stands for where the server reads a name: a bare word as it is, a quoted
 * identifier without its quotes (doubled quotes undone), upper-cased as the server compares
 * names; SQLite also reads a single-quoted string as a name where only a name can stand (before a
 * `.` or a `(`). Undefined for anything that is no name.
 */
function nameOf(t: SqlToken | undefined, dialect: Dialect): string | undefined {
  if (!t) return undefined;
  if (t.kind === "word") return t.text;
  const quoted = t.kind === "identifier" || (t.kind === "string" && dialect === "sqlite");
  if (!quoted || t.text.length < 2) return undefined;
  const open = t.text[0]!;
  const close = open === "[" ? "]" : open;
  return t.text.slice(1, -1).replaceAll(`${close}${close}`, close).toUpperCase();
}

/** Names the server reads as a function call: a bare or quoted name right before `(`. */
function calledNames(tokens: readonly SqlToken[], dialect: Dialect): string[] {
  return tokens.flatMap((t, i) => {
    const next = tokens[i + 1];
    const name = next?.kind === "punct" && next.text === "(" ? nameOf(t, dialect) : undefined;
    return name ? [name] : [];
  });
}

/** Schema (database) qualifiers: the name before a `.`, bare or quoted. */
function qualifiers(tokens: readonly SqlToken[], dialect: Dialect): string[] {
  return tokens.flatMap((t, i) => {
    const next = tokens[i + 1];
    const name = next?.kind === "punct" && next.text === "." ? nameOf(t, dialect) : undefined;
    return name ? [name] : [];
  });
}

/** The upper-cased bare words of `sql` in order, outside comments, strings and quoted identifiers. */
export function codeWords(sql: string, dialect: Dialect): string[] {
  return lexSql(sql, dialect)
    .tokens.filter((t) => t.kind === "word")
    .map((t) => t.text);
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
  mysql: new Set(["OUTFILE", "DUMPFILE", "LOAD_FILE", "INFILE", "MAX_STATEMENT_TIME", "DIRECTORY"]),
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
 * have), and whether it only reads. Storage whose size the sandbox cannot count is refused too:
 * temporary tables on both servers, and MySQL tables of any engine but InnoDB.
 *
 * @example
 * inspectStatement("/* x *\/ ATTACH DATABASE 'x.db' AS a", "sqlite").refusal; // "ATTACH is not allowed …"
 */
export function inspectStatement(sql: string, dialect: Dialect): Statement {
  const lexed = lexSql(sql, dialect);
  const words = lexed.tokens.filter((t) => t.kind === "word").map((t) => t.text);
  const first = words[0];
  const reads =
    first !== undefined &&
    (READS.has(first) || (first === "WITH" && !words.some((w) => w === "INSERT" || w === "UPDATE" || w === "DELETE")));
  if (first === undefined) return { first, reads };
  const refusal = lexed.versionedComment
    ? "versioned executable comments (/*!NNNNN … */) are not allowed in a rollout database"
    : (refusalOf([...words, ...calledNames(lexed.tokens, dialect)], first, dialect) ??
      uncountedStorage(lexed.tokens, first, dialect));
  return { first, reads, refusal };
}

function refusalOf(words: string[], first: string, dialect: Dialect): string | undefined {
  const banned = words.find((w) => NEVER[dialect].has(w));
  if (banned) return `${banned} is not allowed in a rollout database`;
  if (DENIED_FIRST[dialect].has(first)) return `${first} statements are not allowed in a rollout database`;
  if (first === "START" && words[1] !== "TRANSACTION") return "only START TRANSACTION is allowed in a rollout database";
  if (first === "BEGIN" && words[1] === "NOT") return "compound statements are not allowed in a rollout database";
  if (first === "CREATE" && words.slice(1, 3).includes("VIRTUAL"))
    return "virtual tables are not allowed in a rollout database";
  return undefined;
}

/**
 * Storage engines MariaDB and MySQL ship besides InnoDB (a test checks that every engine the
 * server offers is here): named after ENGINE without `=`, they are refused; with `=`, anything
 * but InnoDB is.
 */
export const OTHER_ENGINES: ReadonlySet<string> = new Set(
  "ARIA MYISAM MRG_MYISAM MERGE CSV MEMORY HEAP ARCHIVE BLACKHOLE FEDERATED FEDERATEDX CONNECT SEQUENCE SPIDER ROCKSDB S3 OQGRAPH SPHINX MROONGA COLUMNSTORE TOKUDB PERFORMANCE_SCHEMA NDB NDBCLUSTER EXAMPLE".split(
    " ",
  ),
);

/**
 * Temporary tables (both servers: the server's temporary tablespace or files, outside the
 * rollout database's count) and, on MySQL, an ENGINE other than InnoDB (CSV, Aria, MEMORY, …:
 * their files are not in the tablespace count). A column named `engine` stays allowed. The engine
 * also checks, after each CREATE or ALTER, that the database holds InnoDB tables only.
 */
function uncountedStorage(tokens: SqlToken[], first: string, dialect: Dialect): string | undefined {
  if (first !== "CREATE" && first !== "ALTER") return undefined;
  const words = tokens.filter((t) => t.kind === "word").map((t) => t.text);
  const inTemp = dialect === "sqlite" && qualifiers(tokens, dialect).some((q) => q === "TEMP" || q === "TEMPORARY");
  if (first === "CREATE" && (words.includes("TEMPORARY") || (dialect === "sqlite" && words.includes("TEMP")) || inTemp))
    return "temporary tables are not allowed in a rollout database (their storage is not counted against its limit)";
  if (dialect !== "mysql") return undefined;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== "word" || t.text !== "ENGINE") continue;
    const assigned = tokens[i + 1]?.kind === "punct" && tokens[i + 1]?.text === "=";
    const value = tokens[i + (assigned ? 2 : 1)];
    if (value === undefined || (value.kind === "word" && value.text === "INNODB")) continue;
    if (
      !assigned &&
      value.kind !== "string" &&
      value.kind !== "identifier" &&
      !(value.kind === "word" && OTHER_ENGINES.has(value.text))
    )
      continue;
    return "only InnoDB tables are allowed in a rollout database (other engines' storage is not counted against its limit)";
  }
  return undefined;
}
