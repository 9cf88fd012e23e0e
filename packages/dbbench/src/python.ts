/**
 * Python's textual forms, so that tool outputs and answers read exactly as AgentBench's (which
 * prints `str(cursor.fetchall())`) and its evaluator (which `eval`s them) sees them.
 */

/** A float as Python's `repr(float)`: shortest round-trip digits, fixed for 1e-4 ≤ |x| < 1e16. */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = Math.abs(x).toExponential().split("e") as [string, string];
  const exp = Number(expText);
  const digits = mantissa.replace(".", "");
  const sign = x < 0 ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp >= digits.length - 1) return `${sign}${digits}${"0".repeat(exp - digits.length + 1)}.0`;
    if (exp >= 0) return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
    return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
}

/** A string as Python's `repr(str)`. */
export function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, "0")}`;
    else if ((c >= 0x80 && c < 0xa0) || c === 0xad) out += `\\x${c.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return out + quote;
}

/** A value read from the database, with the Python type mysql-connector (or sqlite3) would give it. */
export type PyValue = null | string | { int: string } | { float: number } | { decimal: string } | { raw: string };

export function pyRepr(v: PyValue): string {
  if (v === null) return "None";
  if (typeof v === "string") return pyStr(v);
  if ("int" in v) return v.int;
  if ("float" in v) return pyFloat(v.float);
  if ("decimal" in v) return `Decimal('${v.decimal}')`;
  return v.raw;
}

/** `str(list_of_tuples)`: `[('a', 1), (None,)]`. */
export function pyRows(rows: readonly (readonly PyValue[])[]): string {
  return `[${rows.map((r) => `(${r.map(pyRepr).join(", ")}${r.length === 1 ? "," : ""})`).join(", ")}]`;
}

/** Python's `s[:n] + "[TRUNCATED]"` when longer than n code points (AgentBench cuts at 800). */
export function truncate(s: string, n = 800): string {
  const chars = Array.from(s);
  return chars.length > n ? `${chars.slice(0, n).join("")}[TRUNCATED]` : s;
}
