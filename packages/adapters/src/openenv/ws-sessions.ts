import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { answerOnSocket, pathOf } from "./http-routes.ts";
import type { OpenEnvErrorCode, OpenEnvServerMessage } from "./protocol.ts";
import { IDLE_CLOSE, type OpenEnvServerLimits } from "./server-limits.ts";
import { errorAnswer, type OpenEnvSession } from "./session.ts";

/** A frame's text, or an error answer for one this protocol does not read. */
function textOf(data: RawData, isBinary: boolean): string | OpenEnvServerMessage {
  if (isBinary) return errorAnswer("INVALID_MESSAGE", "a binary frame: this protocol's messages are JSON text frames");
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  return Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.from(data).toString("utf8");
}

/**
 * Serves one WebSocket session: its messages one at a time, in order (a step waits for the one
 * before it), at most `pendingMessages` read ahead (then the socket is paused); closed when its
 * client has sent nothing for `sessionIdleSeconds` (`IDLE_CLOSE`), dropped when it does not read
 * its answers (`maxBufferedBytes`). A socket error (an oversized message, a text frame that is not
 * UTF-8, a reset connection) ends only this session: ws closes it with its code (1009, 1007, …).
 */
function serveSession(
  ws: WebSocket,
  session: OpenEnvSession,
  limits: OpenEnvServerLimits,
  log: (line: string) => void,
): void {
  let idle: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(
      () => ws.close(IDLE_CLOSE.code, IDLE_CLOSE.reason(limits.sessionIdleSeconds)),
      limits.sessionIdleSeconds * 1_000,
    );
  };
  const send = (answer: OpenEnvServerMessage) => {
    if (ws.bufferedAmount > limits.maxBufferedBytes) return ws.terminate();
    ws.send(JSON.stringify(answer));
  };
  let pending = 0;
  let queue = Promise.resolve();
  ws.on("error", () => undefined);
  ws.on("ping", () => {
    if (ws.bufferedAmount > limits.maxBufferedBytes) ws.terminate();
  });
  ws.on("message", (data, isBinary) => {
    clearTimeout(idle);
    if (++pending >= limits.pendingMessages) ws.pause();
    queue = queue
      .then(async () => {
        if (ws.readyState !== ws.OPEN) return;
        const text = textOf(data, isBinary);
        const answer = typeof text === "string" ? await session.handle(text) : text;
        if (answer === "close") ws.close(1000, "closed by the client");
        else send(answer);
      })
      .catch((err: unknown) => {
        log(`openenv server: a session's message: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        ws.terminate();
      })
      .finally(() => {
        if (--pending < limits.pendingMessages) ws.resume();
        if (pending === 0 && ws.readyState === ws.OPEN) arm();
      });
  });
  ws.on("close", () => {
    clearTimeout(idle);
    void queue.then(() => session.end()).catch(() => undefined);
  });
  arm();
}

/**
 * The WebSocket side of an OpenEnv server: upgrades at `/ws` only (404 elsewhere), at most
 * `maxSessions` sessions (503 past them) and `maxSessionsPerAddress` from one remote address
 * (429), each served by {@link serveSession}. Nothing a client sends throws out of it.
 */
export function openEnvSockets(
  limits: OpenEnvServerLimits,
  newSession: () => OpenEnvSession,
  log: (line: string) => void,
) {
  const server = new WebSocketServer({ noServer: true, maxPayload: limits.maxMessageBytes, perMessageDeflate: false });
  const byAddress = new Map<string, number>();
  let open = 0;
  const release = (address: string) => {
    open--;
    const left = (byAddress.get(address) ?? 1) - 1;
    if (left > 0) byAddress.set(address, left);
    else byAddress.delete(address);
  };
  return {
    upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
      socket.on("error", () => socket.destroy());
      const address = req.socket.remoteAddress ?? "unknown";
      const refusal: [OpenEnvErrorCode, string] | undefined =
        pathOf(req.url) !== "/ws"
          ? ["NOT_FOUND", "WebSocket sessions are at /ws"]
          : open >= limits.maxSessions
            ? ["SESSIONS_FULL", `the server holds its ${limits.maxSessions} sessions: try again later`]
            : (byAddress.get(address) ?? 0) >= limits.maxSessionsPerAddress
              ? [
                  "ADDRESS_SESSIONS_FULL",
                  `this address holds ${limits.maxSessionsPerAddress} sessions, as many as one address may`,
                ]
              : undefined;
      if (refusal) {
        answerOnSocket(socket, ...refusal);
        return;
      }
      open++;
      byAddress.set(address, (byAddress.get(address) ?? 0) + 1);
      let released = false;
      const releaseOnce = () => {
        if (!released) release(address);
        released = true;
      };
      socket.once("close", releaseOnce);
      server.handleUpgrade(req, socket, head, (ws) => {
        ws.once("close", releaseOnce);
        serveSession(ws, newSession(), limits, log);
      });
    },
    /** Ends every session at once (the server stopping). */
    terminateAll(): void {
      for (const ws of server.clients) ws.terminate();
    },
  };
}
