import { currentCorrelationId } from "./correlation.ts";

/** How bad an event is: `error` and `warn` lines go to the error stream. */
export type EventLevel = "info" | "warn" | "error";

/**
 * One event, flat: what happened (`event`, e.g. `http.request`, `queue.record`), and the fields
 * that say to whom (correlationId, keyId, jobId: never a secret) and how (outcome, errorCode, ms).
 */
export type LogEvent = { event: string; level?: EventLevel } & Record<string, string | number | boolean | undefined>;

/** Where events go: a JSON-lines stream, a metrics fold, a test's list. */
export interface EventLogger {
  event(fields: LogEvent): void;
}

/** The bounds of one line: longer strings are cut, fields past the count dropped. */
export const EVENT_LIMITS = { stringChars: 2_000, fields: 40 } as const;

/** Field names that never carry their value into a line, whoever set them. */
const SECRET_FIELD = /secret|password|authorization|bearer|api[-_]?key|credential/i;
/** Values that look like an API key or a bearer credential, wherever they are in a string. */
const SECRET_VALUES: [RegExp, string][] = [
  [/\bhs_[A-Za-z0-9_-]{16,}/g, "hs_[redacted]"],
  [/\b(bearer)\s+\S+/gi, "$1 [redacted]"],
];

/** A field's value as it may be written: secrets masked, bounded. */
function safeValue(key: string, value: string | number | boolean): string | number | boolean {
  if (SECRET_FIELD.test(key)) return "[redacted]";
  if (typeof value !== "string") return Number.isFinite(value) || typeof value === "boolean" ? value : String(value);
  const masked = SECRET_VALUES.reduce((s, [re, by]) => s.replace(re, by), value);
  return masked.length > EVENT_LIMITS.stringChars ? `${masked.slice(0, EVENT_LIMITS.stringChars)}…` : masked;
}

/**
 * The event as one line of JSON: the time, the level, the ambient correlation id when the event
 * names none, then its fields (bounded, secrets masked). JSON escapes every control character;
 * U+2028 and U+2029 are escaped too, so a line is one line to any reader.
 */
export function eventLine(fields: LogEvent, at: number): string {
  const { event, level = "info", ...rest } = fields;
  const correlationId = rest.correlationId ?? currentCorrelationId();
  const out: Record<string, unknown> = { at: new Date(at).toISOString(), level, event: safeValue("event", event) };
  if (correlationId !== undefined) out.correlationId = safeValue("correlationId", correlationId);
  let n = 0;
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined || key === "correlationId" || key === "at" || n++ >= EVENT_LIMITS.fields) continue;
    out[key] = safeValue(key, value);
  }
  return JSON.stringify(out).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/**
 * Events as JSON lines: `info` to `out`, `warn` and `error` to `err` (stdout and stderr at a
 * composition root, or one sink for both).
 *
 * @example
 * const logger = jsonLinesLogger({ out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) });
 * logger.event({ event: "queue.record", function: "dispatch", outcome: "stored", ms: 812 });
 */
export function jsonLinesLogger(
  sinks: { out: (line: string) => void; err?: (line: string) => void },
  now: () => number = Date.now,
): EventLogger {
  return {
    event: (fields) => {
      const line = eventLine(fields, now());
      (fields.level === "warn" || fields.level === "error" ? (sinks.err ?? sinks.out) : sinks.out)(line);
    },
  };
}

/** Each event to every logger (a line, and a metrics fold); one that throws does not stop the others. */
export function teeLogger(...loggers: readonly EventLogger[]): EventLogger {
  return {
    event: (fields) => {
      for (const l of loggers) {
        try {
          l.event(fields);
        } catch {
          // a logger's own failure is never the work's
        }
      }
    },
  };
}
