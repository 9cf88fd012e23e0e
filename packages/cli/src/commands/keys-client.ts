import { HarnessSError } from "@harness-s/core";

/**
 * Where `harness-s keys` talks to: the API's base URL, the acting key's secret, and the longest one request may take.
 */
export interface KeysConnection {
  url: string;
  secret: string;
  timeoutMs: number;
}

/**
 * A `keys` request that did not succeed: the API's own `{error: {code, message}}` for a non-2xx
 * reply (`HTTP_<status>` where the body is not one), or TIMEOUT, UNREACHABLE, BAD_REPLY. Its message
 * never holds the secret the request carried.
 */
export class KeysRequestError extends HarnessSError<string> {
  constructor(
    code: string,
    message: string,
    readonly status?: number,
  ) {
    super(code, message);
  }
}

/** One call of `/v1/keys…`: its method, the path under `/v1/keys` and its JSON body. */
export interface KeysCall {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  body?: unknown;
}

const hidden = (text: string, secret: string) => (secret ? text.split(secret).join("<secret>") : text);

function refusal(status: number, text: string): { code: string; message: string } {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === "string")
      return { code: error.code, message: typeof error.message === "string" ? error.message : "" };
  } catch {
    // not the API's error body: said by its status below
  }
  return { code: `HTTP_${status}`, message: text.slice(0, 200) || `HTTP ${status}` };
}

/**
 * Sends one call with the secret as a bearer token, bounded by `timeoutMs` (headers and body
 * alike), never following a redirect; answers the reply's JSON text as it came.
 */
export async function sendKeysCall(connection: KeysConnection, call: KeysCall): Promise<string> {
  const target = `${connection.url.replace(/\/+$/, "")}/v1/keys${call.path}`;
  let text: string;
  let status: number;
  try {
    const res = await fetch(target, {
      method: call.method,
      headers: {
        authorization: `Bearer ${connection.secret}`,
        accept: "application/json",
        ...(call.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      redirect: "error",
      signal: AbortSignal.timeout(connection.timeoutMs),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    if ((err as Error).name === "TimeoutError")
      throw new KeysRequestError(
        "TIMEOUT",
        `${call.method} ${target}: no reply within ${connection.timeoutMs / 1000} s`,
      );
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new KeysRequestError(
      "UNREACHABLE",
      hidden(`${call.method} ${target}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, connection.secret),
    );
  }
  if (status < 200 || status > 299) {
    const { code, message } = refusal(status, text);
    throw new KeysRequestError(code, hidden(`${message} (HTTP ${status})`, connection.secret), status);
  }
  return text;
}
