import { pyFloat, pyStr } from "./python.ts";
import { PyFloatLiteral } from "./json-py.ts";
import { isTuple, parsePyLiteral, type PyLit } from "./py-literal.ts";

/**
 * AgentBench's DBBench grading, reproduced: answers are normalised (quotes, %, thousands
 * separators, null-likes → "0"), a single value compares as a float within 0.01 or as a string,
 * several values as floats matched one-to-one or as sets; a mutation compares table hashes.
 */

/** Python's `str(x)` of a value (a literal from `eval`, or a JSON value from the tool call). */
function pyStrOf(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (typeof v === "string") return v;
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "number") return String(v);
  if (v instanceof PyFloatLiteral) return pyFloat(v.value);
  if (typeof v === "object" && "float" in (v as object)) return pyFloat((v as { float: number }).float);
  const repr = (x: unknown): string => (typeof x === "string" ? pyStr(x) : pyStrOf(x));
  if (Array.isArray(v)) return `[${v.map(repr).join(", ")}]`;
  if (isTuple(v as PyLit)) {
    const items = (v as { tuple: unknown[] }).tuple;
    return `(${items.map(repr).join(", ")}${items.length === 1 ? "," : ""})`;
  }
  return String(v);
}

const stripQuotes = (s: string) => s.trim().replace(/^['"]+|['"]+$/g, "");

/** Python's float(): digits with optional _, a point, an exponent; inf/infinity/nan. */
export function pyFloatValue(s: string): number | undefined {
  const t = s.trim();
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  if (!/^[+-]?(\d(_?\d)*\.?(\d(_?\d)*)?|\.\d(_?\d)*)([eE][+-]?\d(_?\d)*)?$/.test(t)) return undefined;
  return Number(t.replace(/_/g, ""));
}

const SPECIAL = new Set(["none", "null", "undefined", "nan", "inf", "infinity", "-inf", "-infinity", ""]);

export function normalizeValue(value: unknown): string {
  if (value === null || value === undefined) return "0";
  let s = pyStrOf(value).trim();
  if (s.endsWith("%")) return s.slice(0, -1).trim();
  if (s.includes(",") && !s.startsWith("[") && !s.endsWith("]")) s = s.replace(/,/g, "");
  return SPECIAL.has(s.toLowerCase()) ? "0" : s;
}

function cleanMysqlResult(result: unknown): string[] | undefined {
  if (typeof result !== "string" || !result.startsWith("[") || !result.endsWith("]")) return undefined;
  try {
    const parsed = parsePyLiteral(result);
    if (Array.isArray(parsed) && parsed.every(isTuple)) {
      return parsed.flatMap((t) => (t.tuple.length === 1 ? [stripQuotes(pyStrOf(t.tuple[0]))] : []));
    }
  } catch {
    // fall through to the single-tuple form, as AgentBench does
  }
  const inner = result.replace(/^\[+|\]+$/g, "");
  if ((inner.match(/\(/g) ?? []).length === 1 && inner.startsWith("(") && inner.endsWith(",)"))
    return [stripQuotes(inner.slice(1, -2))];
  return undefined;
}

/** AgentBench's `_clean_answer`. */
export function cleanAnswer(answer: unknown): string[] {
  if (answer === null || answer === undefined) return ["0"];
  const fromMysql = cleanMysqlResult(answer);
  if (fromMysql) return fromMysql.map(normalizeValue);
  if (typeof answer === "string") {
    const a = answer.trim();
    if (a.startsWith("[") && a.endsWith("]")) {
      try {
        const parsed = parsePyLiteral(a);
        if (Array.isArray(parsed))
          return parsed.map((item) =>
            normalizeValue(stripQuotes(pyStrOf(isTuple(item) && item.tuple.length === 1 ? item.tuple[0] : item))),
          );
      } catch {
        const items: string[] = [];
        let current = "";
        let inQuotes = false;
        for (const ch of a.slice(1, -1)) {
          if (ch === '"' || ch === "'") inQuotes = !inQuotes;
          else if (ch === "," && !inQuotes) {
            if (current) items.push(normalizeValue(stripQuotes(current)));
            current = "";
          } else current += ch;
        }
        if (current) items.push(normalizeValue(stripQuotes(current)));
        return items;
      }
    }
    return [normalizeValue(stripQuotes(a))];
  }
  if (Array.isArray(answer))
    return answer.map((item) =>
      normalizeValue(stripQuotes(pyStrOf(isTuple(item) && item.tuple.length === 1 ? item.tuple[0] : item))),
    );
  return [normalizeValue(stripQuotes(pyStrOf(answer)))];
}

const floatEqual = (a: string, b: string) => Math.abs(pyFloatValue(a)! - pyFloatValue(b)!) <= 1e-2;

/**
 * True when `answer` matches `groundTruth` for a row of `type`.
 *
 * @example
 * compareResults(["1,234"], ["1234.004"], "counting"); // true
 */
export function compareResults(answer: unknown, groundTruth: unknown, type: string): boolean {
  try {
    const a = cleanAnswer(answer);
    const g = cleanAnswer(groundTruth);
    if (type === "INSERT" || type === "UPDATE" || type === "DELETE")
      return a.length === g.length && a.every((x, i) => x === g[i]);
    if (a.length === 1 && g.length === 1) {
      const [x, y] = [a[0]!, g[0]!];
      if (x === "0" && y === "0") return true;
      if (pyFloatValue(x) !== undefined && pyFloatValue(y) !== undefined) return floatEqual(x, y);
      return x === y;
    }
    if (a.every((x) => pyFloatValue(x) !== undefined) && g.every((x) => pyFloatValue(x) !== undefined)) {
      if (a.length !== g.length) return false;
      const used = g.map(() => false);
      for (const x of a) {
        const j = g.findIndex((y, k) => !used[k] && floatEqual(x, y));
        if (j < 0) return false;
        used[j] = true;
      }
      return used.every(Boolean);
    }
    const sa = new Set(a);
    const sg = new Set(g);
    return sa.size === sg.size && [...sa].every((x) => sg.has(x));
  } catch {
    return false;
  }
}
