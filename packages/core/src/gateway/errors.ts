import { CoreError } from "../errors.ts";

/** A gateway episode that no longer runs (idle past its limit, ended, or the gateway stopped). */
export class EpisodeClosedError extends CoreError {
  constructor(id: string, why = "it was idle too long, or the gateway stopped") {
    super("EPISODE_CLOSED", `gateway episode ${id} is closed: ${why}`);
  }
}

/** " (HTTP 401)" when the endpoint answered with a status. */
const statusNote = (status: number | undefined) => (status === undefined ? "" : ` (HTTP ${status})`);

/**
 * The model endpoint behind the gateway failed; the episode waits for the agent to send the same
 * request again. The agent is told only the kind of failure: an endpoint's own error text can
 * carry key fragments and account ids, so it stays in `detail`, for the server's log.
 */
export class UpstreamError extends CoreError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown; status?: number },
  ) {
    super(
      "UPSTREAM_FAILED",
      `the gateway's model endpoint failed${statusNote(options?.status)}; send the same request again and the episode goes on`,
      options,
    );
    this.status = options?.status;
  }

  readonly status: number | undefined;
}

/**
 * The model endpoint refused the agent's request as sent (HTTP 400, 413, 422: a parameter it does not take, a
 * conversation too long); `detail` is for the log.
 */
export class UpstreamRejectedError extends CoreError {
  constructor(
    readonly detail: string,
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(
      "UPSTREAM_REJECTED",
      `the model endpoint refused this request as sent${statusNote(status)}: check its sampling parameters and length, then send it again`,
      options,
    );
  }
}
