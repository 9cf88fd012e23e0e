// What a request to the API may be: read by the HTTP layer, and by the deps that override a bound.

/** Deepest JSON nesting a body may have (arrays and objects); deeper bodies are refused with 400. */
export const MAX_JSON_DEPTH = 32;
/** Longest accepted request URL (path and query), in characters; longer ones get 414. */
export const MAX_URL_CHARS = 4096;
/** How a body must arrive: no gap between chunks longer than `idleMs`, all of it within `deadlineMs` (else 408). */
export const BODY_TIMEOUTS = { idleMs: 5_000, deadlineMs: 15_000 };
export type BodyTimeouts = typeof BODY_TIMEOUTS;
/**
 * How long a request past its key's rate is held before its 429 (at most its wait): a key
 * flooding past its rate is slowed to a request a connection per hold, so its refusals cost this
 * instance little and never crowd out another key's requests; Retry-After counts from the answer.
 */
export const RATE_LIMIT_HOLD_MS = 1_000;
