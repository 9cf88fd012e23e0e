import { Readable } from "node:stream";
import type { Context } from "hono";
import { PayloadTooLargeError } from "@harness-s/core";
import { RequestTimeoutError } from "../errors.ts";
import type { BodyTimeouts } from "../request-limits.ts";

/**
 * A request's body as text, counted as it arrives and cut at `maxBytes` (413: an oversized body
 * is never held whole), given up when it stalls or runs past the deadline (408).
 */
export function readLimited(c: Context, maxBytes: number, timeouts: BodyTimeouts): Promise<string> {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return incoming instanceof Readable
    ? readNodeLimited(incoming, maxBytes, timeouts)
    : readWebLimited(c.req.raw, maxBytes, timeouts);
}

/**
 * The same limits read straight from Node's request stream (`@hono/node-server` passes it as
 * `c.env.incoming`): asking Hono's request for its web-stream body would build a whole fetch
 * Request per call, which cost more than the rest of a `/v1/route` request together.
 */
function readNodeLimited(incoming: Readable, maxBytes: number, timeouts: BodyTimeouts): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let idle: ReturnType<typeof setTimeout> | undefined;
    const done = (err?: Error) => {
      clearTimeout(idle);
      clearTimeout(deadline);
      incoming.off("data", onData).off("end", onEnd).off("error", done).off("aborted", onAborted);
      if (err) {
        incoming.pause();
        reject(err);
      } else resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(
        () => done(new RequestTimeoutError(`the request body stalled for ${timeouts.idleMs} ms`)),
        timeouts.idleMs,
      );
    };
    const deadline = setTimeout(
      () => done(new RequestTimeoutError(`the request body took longer than ${timeouts.deadlineMs} ms`)),
      timeouts.deadlineMs,
    );
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > maxBytes) return done(new PayloadTooLargeError(maxBytes));
      chunks.push(chunk);
      arm();
    };
    const onEnd = () => done();
    const onAborted = () => done(new RequestTimeoutError("the client closed the connection before the body arrived"));
    if (incoming.readableEnded) return done();
    incoming.on("data", onData).on("end", onEnd).on("error", done).on("aborted", onAborted);
    arm();
  });
}

/** The web-stream body (a Lambda's, a test's `app.request`) under the same limits. */
async function readWebLimited(req: Request, maxBytes: number, timeouts: BodyTimeouts): Promise<string> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  const deadline = Date.now() + timeouts.deadlineMs;
  let total = 0;
  const fail = async (err: Error): Promise<never> => {
    await reader.cancel().catch(() => undefined);
    throw err;
  };
  for (;;) {
    const left = deadline - Date.now();
    const wait = Math.min(timeouts.idleMs, left);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<"stalled">((resolve) => {
      timer = setTimeout(() => resolve("stalled"), Math.max(0, wait));
    });
    const next = await Promise.race([reader.read(), stalled]).finally(() => clearTimeout(timer));
    if (next === "stalled")
      return fail(
        new RequestTimeoutError(
          wait < timeouts.idleMs
            ? `the request body took longer than ${timeouts.deadlineMs} ms`
            : `the request body stalled for ${timeouts.idleMs} ms`,
        ),
      );
    if (next.done) break;
    total += next.value.byteLength;
    if (total > maxBytes) return fail(new PayloadTooLargeError(maxBytes));
    chunks.push(next.value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
