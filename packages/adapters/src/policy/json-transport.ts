import type { Clock } from "@harness-s/core";
import { PolicyEndpointError, UrlNotAllowedError } from "../errors.ts";

export interface JsonTransportOptions {
  token?: string;
  clock: Clock;
  /** Per-request timeout. */
  timeoutMs?: number;
  /** Headers sent with every request (a caller's secret header). */
  headers?: Record<string, string>;
  /** The fetch that connects (a caller's endpoint: `outboundFetch`, guarded and bounded); default the global one. */
  fetch?: typeof fetch;
  /**
   * How often a request that is safe to repeat is sent again after a dropped connection or a
   * 500/502/503/504 (default 3), waiting 100 ms, 200 ms, 400 ms … between.
   */
  retries?: number;
}

/** Answers that say nothing about the request itself: the same request may succeed next time. */
const TRANSIENT = new Set([500, 502, 503, 504]);

/**
 * An answer that says nothing about the request itself (the same request may succeed next time), unless it says not to
 * retry.
 */
const retryable = (res: Response) => TRANSIENT.has(res.status) && res.headers.get("x-should-retry") !== "false";

const timedOut = (err: unknown) => {
  const e = err as { name?: string; message?: string };
  return e.name === "TimeoutError" || (e.name === "AbortError" && /timed out/.test(e.message ?? ""));
};

/**
 * JSON over HTTP to a policy endpoint: one request, sent again (when `repeatable`) after a dropped
 * connection or a passing 5xx, within the retry bound; a deadline passed is an answer and is
 * never repeated. Answers with the final status and body text; a refused URL keeps its error.
 *
 * @example
 * const { status, text } = await sendJson(opts, base, "/tokenize", "POST", body, {}, true);
 */
export async function sendJson(
  opts: JsonTransportOptions,
  baseUrl: string,
  path: string,
  method: string,
  body: unknown,
  headers: Record<string, string>,
  repeatable: boolean,
): Promise<{ status: number; ok: boolean; text: string }> {
  const retries = repeatable ? (opts.retries ?? 3) : 0;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  let res: Response;
  for (let attempt = 0; ; attempt++) {
    try {
      res = await (opts.fetch ?? fetch)(`${baseUrl}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          ...opts.headers,
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      if (err instanceof UrlNotAllowedError) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const detail = `${method} ${path}: ${(err as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ""}`;
      // A deadline passed is an answer: the endpoint did not give one in time, and will not be asked again.
      if (timedOut(err))
        throw new PolicyEndpointError(`${method} ${path}: no answer within ${timeoutMs} ms`, { cause: err });
      if (attempt < retries) {
        await opts.clock.sleep(100 * 2 ** attempt);
        continue;
      }
      throw new PolicyEndpointError(detail, { cause: err });
    }
    if (!retryable(res) || attempt >= retries) break;
    await res.body?.cancel().catch(() => undefined);
    await opts.clock.sleep(100 * 2 ** attempt);
  }
  return { status: res.status, ok: res.ok, text: await res.text() };
}

/** The value of a JSON text, or undefined where it is not JSON. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** What a network error's cause codes mean, said plainly (Node's and undici's codes). */
const UNANSWERED: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused (is the server running, on that port?)",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "the host name did not resolve (DNS)",
  ECONNRESET: "the connection was reset",
  EHOSTUNREACH: "no route to the host",
  ENETUNREACH: "the network is unreachable",
  ETIMEDOUT: "the connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "the connection timed out",
  UND_ERR_SOCKET: "the connection closed before an answer",
  CERT_HAS_EXPIRED: "its TLS certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "its TLS certificate is self-signed",
};

/**
 * Why a request got no answer, in words (a refused connection, an unknown host, a timeout), never an exception class
 * name: `could not connect: connection refused (…)`.
 */
export function whyUnanswered(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; cause?: { code?: string } } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return "no answer in time";
  const code = e?.cause?.code ?? e?.cause?.cause?.code ?? e?.code;
  const said = code ? UNANSWERED[code] : undefined;
  return said ? `could not connect: ${said}` : `could not connect${code ? ` (${code})` : ""}`;
}
