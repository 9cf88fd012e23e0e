import type { MiddlewareHandler } from "hono";
import { UriTooLongError } from "../errors.ts";
import { MAX_URL_CHARS } from "../request-limits.ts";

/** 414 for URLs longer than {@link MAX_URL_CHARS}, before any handler runs. */
export function limitUrl(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.url.length > MAX_URL_CHARS) throw new UriTooLongError(MAX_URL_CHARS);
    await next();
  };
}
