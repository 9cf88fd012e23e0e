/**
 * A Python literal as `eval` would read it, for the shapes the evaluator meets: lists, tuples,
 * strings, numbers, None/True/False. Anything else is an error (as `eval` of unknown names is).
 */
export type PyLit = string | number | boolean | null | { float: number } | PyLit[] | { tuple: PyLit[] };

export function parsePyLiteral(text: string): PyLit {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const seq = (close: string): PyLit[] => {
    const items: PyLit[] = [];
    for (;;) {
      ws();
      if (text[i] === close) {
        i++;
        return items;
      }
      items.push(value());
      ws();
      if (text[i] === ",") i++;
      else if (text[i] !== close) throw new SyntaxError(`expected , or ${close} at ${i}`);
    }
  };
  const str = (): string => {
    const q = text[i++]!;
    let out = "";
    while (i < text.length && text[i] !== q) {
      if (text[i] === "\\") {
        const n = text[i + 1]!;
        const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0" };
        const width = n === "x" ? 4 : n === "u" ? 6 : 2;
        if (n === "x" || n === "u") out += String.fromCharCode(parseInt(text.slice(i + 2, i + width), 16));
        else out += simple[n] ?? `\\${n}`;
        i += width;
      } else out += text[i++];
    }
    if (text[i] !== q) throw new SyntaxError("unterminated string");
    i++;
    return out;
  };
  const value = (): PyLit => {
    ws();
    const c = text[i];
    if (c === "[") {
      i++;
      return seq("]");
    }
    if (c === "(") {
      i++;
      const start = i;
      const items = seq(")");
      // `(x)` is x, `(x,)` a tuple
      return items.length === 1 && !/,\s*\)$/.test(text.slice(start, i)) ? items[0]! : { tuple: items };
    }
    if (c === "'" || c === '"') {
      let s = str();
      for (ws(); text[i] === "'" || text[i] === '"'; ws()) s += str(); // implicit concatenation
      return s;
    }
    const m = /^(None|True|False|[+-]?(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!m) throw new SyntaxError(`not a literal at ${i}`);
    i += m[0].length;
    if (m[0] === "None") return null;
    if (m[0] === "True") return true;
    if (m[0] === "False") return false;
    const n = Number(m[0].replace(/_/g, ""));
    return /[.eE]/.test(m[0]) ? { float: n } : n;
  };
  const out = value();
  ws();
  if (i !== text.length) throw new SyntaxError(`trailing text at ${i}`);
  return out;
}

export const isTuple = (v: PyLit): v is { tuple: PyLit[] } =>
  typeof v === "object" && v !== null && !Array.isArray(v) && "tuple" in v;
