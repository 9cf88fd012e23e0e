// Python's textual forms, so that tool outputs and answers read exactly as AgentBench's (which
// prints `str(cursor.fetchall())`) and its evaluator (which `eval`s them) sees them. Plain
// JavaScript, so that the SQLite sandbox process renders with the same code as the MySQL session
// (declarations in python-text.d.mts).

/** How many code points AgentBench shows of a tool's output before "[TRUNCATED]". */
export const SHOWN_CODE_POINTS = 800;

export function pyFloat(x) {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = Math.abs(x).toExponential().split("e");
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

function escapeChar(ch, quote) {
  const c = ch.codePointAt(0);
  if (ch === "\\") return "\\\\";
  if (ch === quote) return `\\${quote}`;
  if (ch === "\n") return "\\n";
  if (ch === "\r") return "\\r";
  if (ch === "\t") return "\\t";
  if (c < 0x20 || c === 0x7f || (c >= 0x80 && c < 0xa0) || c === 0xad) return `\\x${c.toString(16).padStart(2, "0")}`;
  return ch;
}

export function pyStr(s, maxCodePoints = Number.POSITIVE_INFINITY) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  let shown = 1;
  for (const ch of s) {
    if (shown >= maxCodePoints) return out;
    const piece = escapeChar(ch, quote);
    out += piece;
    shown += piece === ch ? 1 : piece.length;
  }
  return out + quote;
}

export function pyRepr(v, maxCodePoints = Number.POSITIVE_INFINITY) {
  if (v === null) return "None";
  if (typeof v === "string") return pyStr(v, maxCodePoints);
  if ("int" in v) return v.int;
  if ("float" in v) return pyFloat(v.float);
  if ("decimal" in v) return `Decimal('${v.decimal}')`;
  return v.raw.length > maxCodePoints ? v.raw.slice(0, maxCodePoints) : v.raw;
}

export function codePoints(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export function truncate(s, n = SHOWN_CODE_POINTS) {
  if (s.length <= n) return s;
  let out = "";
  let count = 0;
  for (const ch of s) {
    if (count === n) return `${out}[TRUNCATED]`;
    out += ch;
    count++;
  }
  return s;
}

export class RowsText {
  constructor(limit = SHOWN_CODE_POINTS, maxRows = Number.POSITIVE_INFINITY) {
    this.limit = limit;
    this.maxRows = maxRows;
    this.head = "[";
    this.shown = 1;
    this.rows = 0;
  }

  get full() {
    return this.shown > this.limit;
  }

  push(row) {
    if (this.full || this.rows >= this.maxRows) return false;
    this.rows++;
    this.append(this.rows > 1 ? ", (" : "(");
    row.forEach((value, i) => {
      if (this.full) return;
      if (i > 0) this.append(", ");
      this.append(pyRepr(value, this.limit + 1 - this.shown + 1));
    });
    if (!this.full) this.append(row.length === 1 ? ",)" : ")");
    return !this.full;
  }

  append(piece) {
    this.head += piece;
    this.shown += codePoints(piece);
  }

  text() {
    return truncate(this.full ? this.head : `${this.head}]`, this.limit);
  }
}

export function pyRows(rows) {
  return `[${rows.map((r) => `(${r.map((v) => pyRepr(v)).join(", ")}${r.length === 1 ? "," : ""})`).join(", ")}]`;
}
