/**
 * Control characters (NUL, ESC, CR, LF, DEL, C1) and bidirectional marks, overrides and isolates: a terminal or page
 * acts on them instead of showing them.
 */
const UNSHOWABLE = "[\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]";
const ANY = new RegExp(UNSHOWABLE, "u");
const EVERY = new RegExp(UNSHOWABLE, "gu");

/** Whether `text` holds a character a terminal would act on instead of showing ({@link printable}). */
export const hasUnshowable = (text: string): boolean => ANY.test(text);

/** `text` as a terminal should show it: each control or bidirectional character written as its `\uXXXX` escape. */
export const printable = (text: string): string =>
  text.replace(EVERY, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
