import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  cleanAnswer,
  compareResults,
  mysqlToSqlite,
  parseArgumentsPy,
  parseJsonPy,
  parsePyLiteral,
  PyFloatLiteral,
  pyFloat,
  pyRows,
  pyStr,
  RowsText,
  truncate,
  type PyValue,
} from "@harness-s/dbbench";

describe("Python text forms (what AgentBench prints)", () => {
  it("repr(float) for the forms Python uses", () => {
    expect([1, 100, 0.5, 1e-5, 1e16, 1.5e16, 123456789012345.6, -2.25, 0.0001, 1e22].map(pyFloat)).toEqual([
      "1.0",
      "100.0",
      "0.5",
      "1e-05",
      "1e+16",
      "1.5e+16",
      "123456789012345.6",
      "-2.25",
      "0.0001",
      "1e+22",
    ]);
  });
  it("repr(str) picks quotes and escapes like Python", () => {
    expect(pyStr("abc")).toBe("'abc'");
    expect(pyStr("Checco D'Angelo")).toBe(`"Checco D'Angelo"`);
    expect(pyStr(`a'b"c`)).toBe(`'a\\'b"c'`);
    expect(pyStr("line\nnext\\")).toBe("'line\\nnext\\\\'");
    expect(pyStr("Montréal")).toBe("'Montréal'");
  });
  it("str(fetchall()) and the 800-character cut", () => {
    expect(
      pyRows([
        ["a", { int: "3" }],
        [null, { float: 2 }],
      ]),
    ).toBe("[('a', 3), (None, 2.0)]");
    expect(pyRows([[{ decimal: "1.50" }]])).toBe("[(Decimal('1.50'),)]");
    expect(truncate("x".repeat(801))).toBe(`${"x".repeat(800)}[TRUNCATED]`);
    expect(truncate("é".repeat(800))).toBe("é".repeat(800));
  });
  it("renders a result a row at a time exactly as the whole text cut at 800, and stops once the agent's view is full", () => {
    const value: fc.Arbitrary<PyValue> = fc.oneof(
      fc.constant(null),
      fc.string({ unit: "grapheme", maxLength: 40 }),
      fc.string({ unit: fc.constantFrom("a", "'", '"', "\\", "\n", "é", "😀", "\u0085"), maxLength: 300 }),
      fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map((n) => ({ int: n.toString() })),
      fc.double({ noNaN: true }).map((x) => ({ float: x })),
      fc.string({ unit: "binary-ascii", maxLength: 1200 }).map((s) => ({ raw: `b'${s}'` })),
    );
    const rows = fc.array(fc.array(value, { minLength: 1, maxLength: 4 }), { maxLength: 60 });
    fc.assert(
      fc.property(rows, fc.integer({ min: 1, max: 900 }), fc.integer({ min: 1, max: 80 }), (all, limit, maxRows) => {
        const out = new RowsText(limit, maxRows);
        let read = 0;
        for (const row of all) {
          read++;
          if (!out.push(row)) break;
        }
        expect(out.text()).toBe(truncate(pyRows(all.slice(0, maxRows)), limit));
        expect(out.rows).toBeLessThanOrEqual(maxRows);
        if (read < all.length) expect(out.full || out.rows === maxRows).toBe(true);
      }),
      { numRuns: 400 },
    );
    const huge = new RowsText();
    expect(huge.push(["a".repeat(5_000_000)])).toBe(false);
    expect(huge.text()).toBe(`[('${"a".repeat(797)}[TRUNCATED]`);
  });
  it("JSON as Python reads it keeps float literals; tool-call arguments keep their Python text", () => {
    const v = parseJsonPy('{"a":[1,1.0,2e3,"x"],"b":null}') as { a: unknown[] };
    expect(v.a[0]).toBe(1);
    expect(v.a[1]).toBeInstanceOf(PyFloatLiteral);
    expect(parseArgumentsPy('{"answers":[1.0, 2, "3"]}')).toEqual({ answers: ["1.0", 2, "3"] });
    expect(() => parseArgumentsPy("[1]")).toThrow(/not a JSON object/);
  });
  it("Python literals as eval reads them", () => {
    expect(parsePyLiteral("[('a',), (1.5,), (None,)]")).toEqual([
      { tuple: ["a"] },
      { tuple: [{ float: 1.5 }] },
      { tuple: [null] },
    ]);
    expect(parsePyLiteral("('x')")).toBe("x");
    expect(() => parsePyLiteral("[Decimal('1')]")).toThrow();
  });
});

describe("AgentBench's answer normalisation and comparison", () => {
  it("normalises quotes, %, thousands separators and null-likes", () => {
    expect(cleanAnswer(["'12,345'", "45%", "None", "null", "", " x "])).toEqual(["12345", "45", "0", "0", "0", "x"]);
    expect(cleanAnswer("[('a',), ('b',)]")).toEqual(["a", "b"]);
    expect(cleanAnswer("['a', 'b']")).toEqual(["a", "b"]);
    expect(cleanAnswer(null)).toEqual(["0"]);
  });
  it("compares one value as a float within 0.01, else as text; several as floats one-to-one, else as sets", () => {
    expect(compareResults(["3.004"], ["3"], "counting")).toBe(true);
    expect(compareResults(["3.02"], ["3"], "counting")).toBe(false);
    expect(compareResults(["b", "a"], ["a", "b"], "ranking")).toBe(true);
    expect(compareResults(["a"], ["A"], "other")).toBe(false);
    expect(compareResults(["1.001", "2"], ["2", "1"], "other")).toBe(true);
    expect(compareResults(["1", "2"], ["1", "2", "2"], "other")).toBe(false);
    expect(compareResults(["NULL"], ["none"], "other")).toBe(true);
  });
  it("a mutation compares the table hash with answer_md5", () => {
    expect(
      compareResults("b2b33cba2d11b8d9320695fa1d9828a6", "[('b2b33cba2d11b8d9320695fa1d9828a6',)]", "UPDATE"),
    ).toBe(true);
    expect(compareResults("0000", "[('b2b33cba2d11b8d9320695fa1d9828a6',)]", "UPDATE")).toBe(false);
  });
});

describe("MySQL lexical syntax for the SQLite engine", () => {
  it("rewrites double-quoted strings, backslash escapes and digit-led identifiers; keeps the rest", () => {
    expect(mysqlToSqlite(`INSERT INTO t VALUES ("Men's 50 km", 'a\\nb', 'it''s')`)).toBe(
      `INSERT INTO t VALUES ('Men''s 50 km', 'a\nb', 'it''s')`,
    );
    expect(mysqlToSqlite("INSERT INTO 1952_British_GP (x) VALUES (1e5, 22)")).toBe(
      "INSERT INTO `1952_British_GP` (x) VALUES (1e5, 22)",
    );
    expect(mysqlToSqlite('SELECT `a"b` FROM `t`')).toBe('SELECT `a"b` FROM `t`');
  });
});
