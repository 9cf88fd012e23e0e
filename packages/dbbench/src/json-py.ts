/**
 * JSON as Python's `json.loads` reads it: a number written with a fraction or exponent is a
 * float (so `str()` of it is `100.0`, not `100`). JavaScript's JSON.parse loses that; this keeps it.
 */
export class PyFloatLiteral {
  constructor(readonly value: number) {}
}

export function parseJsonPy(text: string): unknown {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: Record<string, unknown> = {};
      ws();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        const key = value() as string;
        ws();
        i++; // :
        obj[key] = value();
        ws();
        if (text[i++] === "}") return obj;
      }
    }
    if (c === "[") {
      i++;
      const arr: unknown[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i++] === "]") return arr;
      }
    }
    if (c === '"') {
      const start = i;
      i++;
      while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i));
    }
    const m = /^(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!m) throw new SyntaxError(`unexpected ${JSON.stringify(text.slice(i, i + 20))} at ${i}`);
    i += m[0].length;
    if (m[0] === "true") return true;
    if (m[0] === "false") return false;
    if (m[0] === "null") return null;
    return /[.eE]/.test(m[0]) ? new PyFloatLiteral(Number(m[0])) : Number(m[0]);
  };
  const out = value();
  ws();
  if (i !== text.length) throw new SyntaxError(`trailing text at ${i}`);
  return out;
}
