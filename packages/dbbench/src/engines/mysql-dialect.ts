/**
 * Rewrites the parts of MySQL's lexical syntax that SQLite reads differently, so MySQL-dialect
 * SQL (the agent's and the gold) runs on the SQLite engine:
 * - "double-quoted" text is a string in MySQL, an identifier in SQLite → single-quoted string;
 * - backslash escapes in strings (\n, \', \\, …) → the characters themselves;
 * - an unquoted identifier that starts with a digit (1952_British_GP) → `quoted`.
 * Everything else passes through unchanged.
 */
export function mysqlToSqlite(sql: string): string {
  let out = "";
  let i = 0;
  const ESC: Record<string, string> = {
    "0": "\0",
    "'": "'",
    '"': '"',
    b: "\b",
    n: "\n",
    r: "\r",
    t: "\t",
    Z: "\x1a",
    "\\": "\\",
    "%": "\\%",
    _: "\\_",
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      let value = "";
      i++;
      while (i < sql.length) {
        const d = sql[i]!;
        if (d === "\\" && i + 1 < sql.length) {
          const n = sql[i + 1]!;
          value += ESC[n] ?? n;
          i += 2;
        } else if (d === c && sql[i + 1] === c) {
          value += c;
          i += 2;
        } else if (d === c) {
          i++;
          break;
        } else {
          value += d;
          i++;
        }
      }
      out += `'${value.replace(/'/g, "''")}'`;
    } else if (c === "`") {
      const end = sql.indexOf("`", i + 1);
      const stop = end < 0 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop;
    } else if (/\d/.test(c) && !/[\w.]/.test(sql[i - 1] ?? " ")) {
      const m = /^\d+[A-Za-z_]\w*/.exec(sql.slice(i));
      if (m && !/^\d+[eE][+-]?\d+$/.test(m[0])) {
        out += `\`${m[0]}\``;
        i += m[0].length;
      } else {
        out += c;
        i++;
      }
    } else {
      out += c;
      i++;
    }
  }
  return out;
}
