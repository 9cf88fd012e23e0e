/** A value read from the database, with the Python type mysql-connector (or sqlite3) would give it. */
export type PyValue = null | string | { int: string } | { float: number } | { decimal: string } | { raw: string };

/** How many code points AgentBench shows of a tool's output before "[TRUNCATED]" (800). */
export declare const SHOWN_CODE_POINTS: number;

/** A float as Python's `repr(float)`: shortest round-trip digits, fixed for 1e-4 ≤ |x| < 1e16. */
export declare function pyFloat(x: number): string;

/**
 * A string as Python's `repr(str)`; with `maxCodePoints`, only the first that many code points
 * of it (the quote is still chosen from the whole string), so a huge value costs what is shown.
 *
 * @example
 * pyStr("it's"); // "\"it's\""
 */
export declare function pyStr(s: string, maxCodePoints?: number): string;

/** One value's `repr`, or its first `maxCodePoints` code points. */
export declare function pyRepr(v: PyValue, maxCodePoints?: number): string;

/** Code points in `s` (Python's `len`). */
export declare function codePoints(s: string): number;

/** Python's `s[:n] + "[TRUNCATED]"` when longer than n code points (AgentBench cuts at 800). */
export declare function truncate(s: string, n?: number): string;

/**
 * `str(rows)[:limit] + "[TRUNCATED]"` built a row at a time: once the text is past what the agent
 * can see, `push` answers false and reading can stop; `text()` equals `truncate(pyRows(all rows))`
 * whatever rows came after. Memory and time are bounded by the limit, not by the result.
 *
 * @example
 * const out = new RowsText();
 * for (const row of rows) if (!out.push(row)) break;
 * out.text();
 */
export declare class RowsText {
  /** `maxRows`: rows taken at most; a row past them is refused like one past the text's limit. */
  constructor(limit?: number, maxRows?: number);
  /** Rows pushed so far (the last may be shown only in part). */
  readonly rows: number;
  /** The text is already past the limit: later rows cannot be seen. */
  readonly full: boolean;
  /** Adds a row; false once nothing more can be shown (this row was cut or refused): stop reading. */
  push(row: readonly PyValue[]): boolean;
  text(): string;
}

/** `str(list_of_tuples)`: `[('a', 1), (None,)]`. */
export declare function pyRows(rows: readonly (readonly PyValue[])[]): string;
