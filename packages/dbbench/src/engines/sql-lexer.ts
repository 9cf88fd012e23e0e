/**
 * One lexer per server, tokenising as that server's own lexer does: what it skips as a comment,
 * reads as a string or a quoted identifier, or runs as code. The statement guard decides on
 * these tokens, so a comment, string or whitespace trick that the server reads one way cannot be
 * read another way here. Checked against the servers themselves (tests/integration/sql-lexer).
 *
 * MySQL/MariaDB (sql_mode '' as the rollout sessions run): `#` and `-- ` comments (two dashes
 * and then a space or control character, so `1--1` is minus minus one), `/* … *\/` comments,
 * executable comments `/*! … *\/` and `/*M! … *\/` read as code (a version number after the
 * `!` is reported: the server runs or skips it by its own version), strings in '…' and "…" with
 * backslash escapes and doubled quotes, identifiers in backticks.
 * SQLite: `--` to the end of the line, `/* … *\/`, strings in '…', identifiers in "…", `…` and
 * [ … ]; no backslash escapes.
 */
export type Dialect = "mysql" | "sqlite";

export interface SqlToken {
  kind: "word" | "number" | "string" | "identifier" | "punct";
  /** A word upper-cased; a string's or identifier's text as written (quotes included); a punct's character. */
  text: string;
  /** Parenthesis depth the token stands at (0 outside every parenthesis). */
  depth: number;
}

export interface Lexed {
  tokens: SqlToken[];
  /** An executable comment carried a version number (`/*!50000 … *\/`, `/*M!100000 … *\/`). */
  versionedComment: boolean;
}

const WORD_START = /[A-Za-z_$\u0080-\uffff]/;
const WORD_CHAR = /[\w$\u0080-\uffff]/;
const NUMBER = /^(\d+([eE][+-]?\d+)?|0x[0-9a-fA-F]+|0b[01]+)$/;

/**
 * The tokens of `sql` as `dialect`'s server reads them.
 *
 * @example
 * lexSql("SELECT 1--1", "mysql").tokens.map((t) => t.text); // ["SELECT", "1", "-", "-", "1"]
 * lexSql("SELECT 1--1", "sqlite").tokens.map((t) => t.text); // ["SELECT", "1"]
 */
export function lexSql(sql: string, dialect: Dialect): Lexed {
  const mysql = dialect === "mysql";
  const tokens: SqlToken[] = [];
  let versionedComment = false;
  let depth = 0;
  let i = 0;
  const n = sql.length;
  const push = (kind: SqlToken["kind"], text: string) => tokens.push({ kind, text, depth });
  const quoted = (close: string, escapes: boolean): string => {
    const start = i++;
    while (i < n) {
      if (escapes && sql[i] === "\\") i += 2;
      else if (sql[i] === close && sql[i + 1] === close) i += 2;
      else if (sql[i] === close) {
        i++;
        break;
      } else i++;
    }
    return sql.slice(start, Math.min(i, n));
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === "-" && next === "-" && (!mysql || i + 2 >= n || sql.charCodeAt(i + 2) <= 32)) i = lineEnd(sql, i);
    else if (c === "#" && mysql) i = lineEnd(sql, i);
    else if (c === "/" && next === "*") {
      const executable = mysql && (sql[i + 2] === "!" || (sql[i + 2] === "M" && sql[i + 3] === "!"));
      if (executable) {
        i += sql[i + 2] === "!" ? 3 : 4;
        if (/\d/.test(sql[i] ?? "")) versionedComment = true;
        while (i < n && /\d/.test(sql[i]!)) i++;
      } else {
        const end = sql.indexOf("*/", i + 2);
        i = end < 0 ? n : end + 2;
      }
    } else if (c === "*" && next === "/" && mysql) i += 2;
    else if (c === "'") push("string", quoted("'", mysql));
    else if (c === '"') push(mysql ? "string" : "identifier", quoted('"', mysql));
    else if (c === "`") push("identifier", quoted("`", false));
    else if (c === "[" && !mysql) {
      const end = sql.indexOf("]", i + 1);
      const stop = end < 0 ? n : end + 1;
      push("identifier", sql.slice(i, stop));
      i = stop;
    } else if (WORD_START.test(c) || /\d/.test(c)) {
      const start = i;
      while (i < n && WORD_CHAR.test(sql[i]!)) i++;
      const text = sql.slice(start, i);
      if (NUMBER.test(text)) push("number", text);
      else push("word", text.toUpperCase());
    } else if (c.trim() === "") i++;
    else {
      if (c === ")") depth = Math.max(0, depth - 1);
      push("punct", c);
      if (c === "(") depth++;
      i++;
    }
  }
  return { tokens, versionedComment };
}

function lineEnd(sql: string, from: number): number {
  const end = sql.indexOf("\n", from);
  return end < 0 ? sql.length : end + 1;
}
