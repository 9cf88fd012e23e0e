import { AsyncLocalStorage } from "node:async_hooks";
import { z } from "zod";

/** The longest correlation id taken from a request's `x-request-id` (and carried in envelopes). */
export const CORRELATION_ID_CHARS = { min: 8, max: 128 } as const;

/**
 * The id one request's work carries, from the API's log line through every queue message sent on
 * its behalf to each worker's line: letters, digits and `._:-` only, so it is safe in a log line,
 * a header and a label as it is.
 */
export const CorrelationId = z
  .string()
  .min(CORRELATION_ID_CHARS.min)
  .max(CORRELATION_ID_CHARS.max)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/);
export type CorrelationId = z.infer<typeof CorrelationId>;

/** A fresh id: 32 lowercase hex digits, the shape of a W3C trace id (a tracer downstream can take it as one). */
export function mintCorrelationId(): CorrelationId {
  return crypto.randomUUID().replace(/-/g, "");
}

/** W3C Trace Context `traceparent`: version, trace id, parent id, flags (a later version may append fields). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** `traceparent` is 55 characters in version 00; later versions are read up to this many. */
const TRACEPARENT_MAX_CHARS = 512;

/**
 * The trace id of a valid `traceparent` header (never version ff, an all-zero trace or parent id, or extra fields in
 * version 00).
 */
export function traceIdOf(traceparent: string | undefined): CorrelationId | undefined {
  if (!traceparent || traceparent.length > TRACEPARENT_MAX_CHARS) return undefined;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return undefined;
  const [, version, traceId, parentId, , rest] = m;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  return traceId;
}

/**
 * A request's correlation id: a valid `traceparent`'s trace id, else a valid `x-request-id`, else
 * a fresh one. A header that is not valid is ignored, never echoed or logged.
 *
 * @example
 * correlationIdOf({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }); // "4bf92f3577b34da6a3ce929d0e0e4736"
 */
export function correlationIdOf(headers: {
  traceparent?: string | undefined;
  requestId?: string | undefined;
}): CorrelationId {
  const given = CorrelationId.safeParse(headers.requestId);
  return traceIdOf(headers.traceparent) ?? (given.success ? given.data : mintCorrelationId());
}

const scope = new AsyncLocalStorage<CorrelationId>();

/**
 * Runs `fn` on behalf of `id`: every envelope made while it runs (awaited or not) carries the id,
 * and so do the events logged there. The API runs each request in one; a worker each record, under
 * its envelope's id.
 */
export function withCorrelationId<T>(id: CorrelationId, fn: () => T): T {
  return scope.run(id, fn);
}

/** The id of the work running now (none outside {@link withCorrelationId}). */
export function currentCorrelationId(): CorrelationId | undefined {
  return scope.getStore();
}
