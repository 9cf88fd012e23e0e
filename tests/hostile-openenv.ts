import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/**
 * How one hostile environment answers: an oversized first observation, a raw grading answer, or its session's headers
 * echoed in an error.
 */
export interface HostileEnvReply {
  resetText?: string;
  submitRaw?: string;
  resetEchoHeaders?: boolean;
}

/**
 * An OpenEnv-protocol environment on loopback whose behaviour is chosen by the first segment of
 * its URL's path (`<url>/<case>/ws`): one server, one behaviour per rescue. Every other message
 * is answered as a plain environment would (an observation; the submit step graded 0).
 */
export async function startHostileOpenEnv(script: (name: string) => HostileEnvReply) {
  const repliedAt = new Map<string, number>();
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on("upgrade", (req: IncomingMessage, socket, head) => {
    const name = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname.split("/")[1] ?? "");
    sockets.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      ws.on("error", () => undefined);
      ws.on("message", (data) => {
        const reply = script(name);
        const message = JSON.parse(data.toString()) as { type: string; data?: { tool_name?: string } };
        const send = (text: string) => {
          ws.send(text);
          repliedAt.set(name, Date.now());
        };
        if (message.type === "reset") {
          if (reply.resetEchoHeaders)
            return send(
              JSON.stringify({
                type: "error",
                data: { message: `headers: ${JSON.stringify(req.headers)}`, code: "BAD" },
              }),
            );
          return send(
            JSON.stringify({
              type: "observation",
              data: { observation: { text: reply.resetText ?? "ready" }, reward: null, done: false },
            }),
          );
        }
        if (message.type === "step" && message.data?.tool_name === "submit" && reply.submitRaw)
          return send(reply.submitRaw);
        if (message.type === "step")
          return send(
            JSON.stringify({
              type: "observation",
              data: {
                observation: { text: "ok", success: false },
                reward: 0,
                done: message.data?.tool_name === "submit",
              },
            }),
          );
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    repliedAt,
    close: () =>
      new Promise<void>((r) => {
        for (const ws of sockets.clients) ws.terminate();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
