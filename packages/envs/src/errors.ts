import { HarnessSError } from "@harness-s/core";

/** The environments package's error codes. */
export type EnvsErrorCode = "ENVIRONMENT_SERVER_FAILED" | "ENVIRONMENT_SERVERS_BUSY" | "SANDBOX_EXCEPTION";

/** An error of an environment this package runs: a stable `code` and its `cause`. */
export class EnvsError extends HarnessSError<EnvsErrorCode> {}

/** An environment server answered with an error, an unreadable body, or not in time. */
export class EnvironmentServerError extends EnvsError {
  constructor(server: string, what: string, detail: string, cause?: unknown) {
    super("ENVIRONMENT_SERVER_FAILED", `${what} at ${server} failed: ${detail}`, { cause });
  }
}

/** Every server of a pool held by another episode for longer than the wait allows. */
export class EnvironmentServersBusyError extends EnvsError {
  constructor(servers: number, waitedMs: number) {
    super(
      "ENVIRONMENT_SERVERS_BUSY",
      `all ${servers} environment servers stayed busy for ${waitedMs} ms (one live task per server: add servers or run fewer rollouts at once)`,
    );
  }
}

/**
 * The sandbox ran the request and raised (SWE-ReX's 511: a timeout, a path outside the checkout, a missing session).
 */
export class SandboxExceptionError extends EnvsError {
  constructor(
    readonly classPath: string,
    message: string,
  ) {
    super("SANDBOX_EXCEPTION", `the sandbox raised ${classPath}: ${message}`);
  }
}
