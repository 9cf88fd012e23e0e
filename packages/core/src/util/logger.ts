/**
 * Where core reports what it may not fail on but must not hide: a write that failed and will be
 * retried or superseded (a progress write, a step record, a metering call).
 *
 * @example
 * const logger = memoryLogger(); runExperimentJob(id, { ...deps, logger }); logger.lines; // ["step record … failed: …"]
 */
export interface Logger {
  warn(message: string): void;
}

/** Lines on stderr (what a Lambda's CloudWatch log and a terminal both show). */
export const consoleLogger: Logger = { warn: (message) => console.warn(message) };

/** Keeps the lines, for tests. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (message) => void lines.push(message) };
}

/** A promise's failure as a log line instead of an unhandled rejection. */
export function logFailure(logger: Logger, what: string): (err: unknown) => void {
  return (err) => logger.warn(`${what} failed: ${err instanceof Error ? err.message : String(err)}`);
}
