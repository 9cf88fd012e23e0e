import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { z } from "zod";
import { OpenEnvAction, OpenEnvResetData, type OpenEnvErrorCode } from "./protocol.ts";
import type { OpenEnvServerLimits } from "./server-limits.ts";
import type { OpenEnvSession } from "./session.ts";

/** The HTTP status of each error code an HTTP route answers with (the one place they are mapped). */
export const OPENENV_HTTP_STATUS: Record<OpenEnvErrorCode, number> = {
  INVALID_JSON: 400,
  INVALID_MESSAGE: 400,
  UNKNOWN_TASK: 400,
  NO_EPISODE: 400,
  TOOL_NOT_FOUND: 400,
  EXECUTION_ERROR: 500,
  NOT_FOUND: 404,
  BAD_REQUEST: 400,
  HEADERS_TOO_LARGE: 431,
  PAYLOAD_TOO_LARGE: 413,
  REQUEST_TIMEOUT: 408,
  SESSIONS_FULL: 503,
  ADDRESS_SESSIONS_FULL: 429,
  INTERNAL: 500,
};

/** The client went away before its body arrived: nothing to answer, nothing to log. */
class ClientGone extends Error {}

class RouteError extends Error {
  constructor(
    readonly code: OpenEnvErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const json = (res: ServerResponse, status: number, body: unknown, close = false) => {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...(close ? { connection: "close" } : {}) });
  res.end(text);
};

/**
 * An error answer: `{detail: {code, message}}` at the code's status (the connection closed after a body that was not
 * read whole).
 */
const failed = (res: ServerResponse, code: OpenEnvErrorCode, message: string) =>
  json(
    res,
    OPENENV_HTTP_STATUS[code],
    { detail: { code, message } },
    code === "PAYLOAD_TOO_LARGE" || code === "REQUEST_TIMEOUT",
  );

/** A request's path, or undefined for a target no URL parser reads. */
export function pathOf(target: string | undefined): string | undefined {
  try {
    return new URL(target ?? "/", "http://openenv.invalid").pathname;
  } catch {
    return undefined;
  }
}

/** A request body, bounded in bytes (by its declared length before reading, then as it arrives) and in time. */
function readBody(
  req: IncomingMessage,
  limits: Pick<OpenEnvServerLimits, "maxBodyBytes" | "bodyTimeoutMs">,
): Promise<Buffer> {
  const tooLarge = () => new RouteError("PAYLOAD_TOO_LARGE", `the body is over ${limits.maxBodyBytes} bytes`);
  if (Number(req.headers["content-length"]) > limits.maxBodyBytes) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: Error) => {
      clearTimeout(timer);
      req.removeListener("data", onData);
      req.removeListener("end", onEnd);
      if (err) {
        req.pause();
        reject(err);
      } else resolve(Buffer.concat(chunks, size));
    };
    const timer = setTimeout(
      () => done(new RouteError("REQUEST_TIMEOUT", `the body did not arrive within ${limits.bodyTimeoutMs} ms`)),
      limits.bodyTimeoutMs,
    );
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBodyBytes) done(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => done();
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", (err) => done(new ClientGone(err.message)));
  });
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The body as JSON (an empty body is `{}`). */
async function jsonBody(req: IncomingMessage, limits: OpenEnvServerLimits): Promise<unknown> {
  const bytes = await readBody(req, limits);
  if (bytes.length === 0) return {};
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    throw new RouteError(
      "INVALID_JSON",
      "the body is not JSON (UTF-8): send a JSON object of reset's arguments, see GET /schema",
    );
  }
}

/** `GET /schema`: what an action, an observation, the state and reset's arguments look like (JSON schema). */
const schema = () => ({
  action: z.toJSONSchema(OpenEnvAction, { io: "input" }),
  observation: {
    type: "object",
    properties: {
      text: { type: "string" },
      event: { type: "string" },
      facts: { type: "array" },
      tools: { type: "array" },
    },
  },
  state: {
    type: "object",
    properties: {
      episode_id: { type: ["string", "null"] },
      task_id: { type: ["string", "null"] },
      seed: { type: ["integer", "null"] },
      step_count: { type: "integer" },
    },
  },
  reset: z.toJSONSchema(OpenEnvResetData, { io: "input" }),
});

export interface HttpRouteDeps {
  limits: OpenEnvServerLimits;
  newSession: () => OpenEnvSession;
  log: (line: string) => void;
  /** HTTP resets in progress (each holds an episode until it answers): at most `maxSessions`. */
  httpResets: { running: number };
}

const isCode = (code: string | undefined): code is OpenEnvErrorCode =>
  code !== undefined && Object.hasOwn(OPENENV_HTTP_STATUS, code);

type Route = (req: IncomingMessage, res: ServerResponse, deps: HttpRouteDeps) => Promise<void> | void;

/** `POST /reset`, stateless: the task's first observation from a session opened and ended for this request. */
const reset: Route = async (req, res, deps) => {
  const body = await jsonBody(req, deps.limits);
  if (deps.httpResets.running >= deps.limits.maxSessions)
    return failed(res, "SESSIONS_FULL", `${deps.limits.maxSessions} resets are running: try again later`);
  deps.httpResets.running++;
  const session = deps.newSession();
  try {
    const answer = await session.dispatch({ type: "reset", data: body });
    if (answer !== "close" && answer.type === "observation") return json(res, 200, answer.data);
    if (answer !== "close" && answer.type === "error")
      return failed(res, isCode(answer.data.code) ? answer.data.code : "INTERNAL", answer.data.message);
    failed(res, "INTERNAL", "reset did not answer an observation");
  } finally {
    deps.httpResets.running--;
    await session.end();
  }
};

/** The HTTP routes, by method and path. */
const ROUTES: Record<string, Route> = {
  "GET /health": (_req, res) => json(res, 200, { status: "healthy" }),
  "GET /metadata": (_req, res) =>
    json(res, 200, { name: "harness-s", description: "a Harness-S environment over the OpenEnv protocol" }),
  "GET /state": (_req, res) => json(res, 200, { episode_id: null, step_count: 0 }),
  "GET /schema": (_req, res) => json(res, 200, schema()),
  "POST /step": (_req, res) => failed(res, "NO_EPISODE", "a step needs an episode: open a WebSocket session at /ws"),
  "POST /reset": reset,
};

/**
 * Answers one HTTP request; never throws or rejects: an error of the client's is its status
 * (`OPENENV_HTTP_STATUS`), anything else a 500 `INTERNAL` (logged, not sent), the server going on.
 */
export async function answerHttp(req: IncomingMessage, res: ServerResponse, deps: HttpRouteDeps): Promise<void> {
  const method = req.method ?? "GET";
  const path = pathOf(req.url);
  try {
    const route = path === undefined ? undefined : ROUTES[`${method} ${path}`];
    if (!route) return failed(res, "NOT_FOUND", `no route ${method} ${path ?? "(unreadable target)"}`.slice(0, 300));
    await route(req, res, deps);
  } catch (err) {
    if (err instanceof RouteError) return failed(res, err.code, err.message);
    if (err instanceof ClientGone) return void res.destroy();
    deps.log(`openenv server: ${method} ${path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    if (res.headersSent) res.destroy();
    else failed(res, "INTERNAL", "internal error");
  }
}

/**
 * An error answer written on a raw socket (no request object: a refused upgrade, a request the parser refused), then
 * the connection closed.
 */
export function answerOnSocket(socket: Duplex, code: OpenEnvErrorCode, message: string): void {
  const status = OPENENV_HTTP_STATUS[code];
  const body = JSON.stringify({ detail: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** What a request the HTTP parser refused is answered, by the parser's error code. */
const CLIENT_ERRORS: Record<string, OpenEnvErrorCode> = {
  HPE_HEADER_OVERFLOW: "HEADERS_TOO_LARGE",
  ERR_HTTP_REQUEST_TIMEOUT: "REQUEST_TIMEOUT",
};

/**
 * Answers a request the HTTP parser refused (a garbage request line, headers too large or too
 * slow) with its status and closes the connection; a connection already gone is dropped.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  answerOnSocket(
    socket,
    CLIENT_ERRORS[err.code ?? ""] ?? "BAD_REQUEST",
    `not a request this server reads (${err.code ?? "bad request"})`,
  );
}
