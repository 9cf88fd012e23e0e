import { HarnessSError } from "@harness-s/core";

/** The codes of DBBench's own errors. */
export const DBBENCH_ERROR_CODES = ["SQL_SERVER_UNAVAILABLE"] as const;
export type DbbenchErrorCode = (typeof DBBENCH_ERROR_CODES)[number];

/** The MySQL/MariaDB server could not be reached or refused the engine's own work. */
export class SqlServerError extends HarnessSError<DbbenchErrorCode> {
  constructor(detail: string, options?: { cause?: unknown }) {
    super("SQL_SERVER_UNAVAILABLE", detail, options);
  }
}
