/**
 * Python's textual forms (see python-text.mjs, shared with the SQLite sandbox process).
 */
export { RowsText, SHOWN_CODE_POINTS, codePoints, pyFloat, pyRepr, pyRows, pyStr, truncate } from "./python-text.mjs";
export type { PyValue } from "./python-text.mjs";
