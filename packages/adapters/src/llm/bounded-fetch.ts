import OpenAI from "openai";

/**
 * The most an OpenAI-compatible endpoint's reply may hold: a chat completion with its log-probabilities, and a voter's
 * ballot.
 */
export const REPLY_BYTES = { completion: 8 << 20, ballot: 1 << 20 } as const;

/** Answered in place of a reply that grew past its bound: a 502 the SDK does not retry. */
function tooLarge(maxBytes: number): Response {
  const body = JSON.stringify({
    error: { code: "reply_too_large", message: `the endpoint's reply exceeded ${maxBytes} bytes; it was cut off` },
  });
  return new Response(body, {
    status: 502,
    headers: { "content-type": "application/json", "x-should-retry": "false" },
  });
}

class ReplyTooLarge extends Error {}

async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    total += next.value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new ReplyTooLarge();
    }
    chunks.push(next.value);
  }
  return Buffer.concat(chunks);
}

/**
 * A fetch whose whole exchange is bounded: headers and body within `deadlineMs` (the OpenAI
 * SDK's own timeout stops at the headers, so a reply trickled a byte at a time would hold a
 * request for as long as the server likes), and at most `maxBytes` of body (a larger one is
 * cut off as it arrives, the connection dropped, and a 502 answered instead). A caller's abort
 * (a voter's deadline) stops the download too. The body is handed on whole, already read.
 * `inner` is the fetch that connects (default the global one; `outboundFetch` gives a guarded one).
 *
 * @example
 * const client = new OpenAI({ baseURL, apiKey, fetch: boundedFetch({ maxBytes: REPLY_BYTES.ballot, deadlineMs: 5_000 }) });
 */
export function boundedFetch(
  limits: { maxBytes: number; deadlineMs: number },
  inner: typeof fetch = fetch,
): typeof fetch {
  return async (input, init) => {
    const controller = new AbortController();
    const outer = init?.signal;
    const onAbort = () => controller.abort(outer?.reason);
    if (outer?.aborted) onAbort();
    outer?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(
      () =>
        controller.abort(new DOMException(`no whole reply within ${limits.deadlineMs} ms (timed out)`, "AbortError")),
      limits.deadlineMs,
    );
    try {
      const res = await inner(input, { ...init, signal: controller.signal });
      const declared = Number(res.headers.get("content-length") ?? Number.NaN);
      if (declared > limits.maxBytes) {
        controller.abort();
        return tooLarge(limits.maxBytes);
      }
      const body = await readCapped(res.body, limits.maxBytes);
      const headers = new Headers(res.headers);
      headers.delete("content-length");
      headers.delete("content-encoding");
      return new Response(body.byteLength || ![204, 205, 304].includes(res.status) ? (body as BodyInit) : null, {
        status: res.status,
        statusText: res.statusText,
        headers,
      });
    } catch (err) {
      if (err instanceof ReplyTooLarge) {
        controller.abort();
        return tooLarge(limits.maxBytes);
      }
      throw err;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    }
  };
}

export interface BoundedClientOptions {
  baseURL?: string;
  apiKey: string;
  /** The whole exchange's deadline, headers and body. */
  timeoutMs: number;
  maxRetries: number;
  /** Largest reply read (default {@link REPLY_BYTES}.completion). */
  maxReplyBytes?: number;
}

/**
 * An OpenAI SDK client whose every request is bounded in time and size ({@link boundedFetch}):
 * the one way this project builds a client for an endpoint it does not run itself (a gateway's
 * model, a voter, a proposer, an evaluated agent's model).
 *
 * @example
 * const client = boundedOpenAi({ baseURL: "http://127.0.0.1:8000/v1", apiKey: "none", timeoutMs: 120_000, maxRetries: 1 });
 */
export function boundedOpenAi(opts: BoundedClientOptions): OpenAI {
  return new OpenAI({
    ...(opts.baseURL !== undefined ? { baseURL: opts.baseURL } : {}),
    apiKey: opts.apiKey,
    timeout: opts.timeoutMs,
    maxRetries: opts.maxRetries,
    fetch: boundedFetch({ maxBytes: opts.maxReplyBytes ?? REPLY_BYTES.completion, deadlineMs: opts.timeoutMs }),
  });
}
