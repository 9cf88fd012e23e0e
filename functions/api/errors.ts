import { HarnessSError } from "@harness-s/core";

/** The codes only the HTTP layer raises: how a request arrived, not what it asked. */
export const TRANSPORT_ERROR_CODES = ["URI_TOO_LONG", "UNSUPPORTED_MEDIA_TYPE", "REQUEST_TIMEOUT"] as const;
export type TransportErrorCode = (typeof TRANSPORT_ERROR_CODES)[number];

class TransportError extends HarnessSError<TransportErrorCode> {}

/** A body sent with a content type the endpoint does not read (HTTP 415); JSON endpoints read application/json only. */
export class UnsupportedMediaTypeError extends TransportError {
  constructor(readonly got: string | undefined) {
    super("UNSUPPORTED_MEDIA_TYPE", `this endpoint reads application/json bodies; got ${got ? JSON.stringify(got) : "no content-type"}`);
  }
}

/** A body that stopped arriving (idle past the limit) or took longer than the deadline in all (HTTP 408). */
export class RequestTimeoutError extends TransportError {
  constructor(what: string) {
    super("REQUEST_TIMEOUT", what);
  }
}

/** A request URL is longer than the API accepts (HTTP 414). */
export class UriTooLongError extends TransportError {
  constructor(readonly maxChars: number) {
    super("URI_TOO_LONG", `request URL exceeds ${maxChars} characters`);
  }
}
