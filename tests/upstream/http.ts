import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

// What the upstream stand-ins share: a loopback HTTP server that records each request, the toy model of
// tests/served-stub.ts (one id a character, log-probabilities re-scorable exactly by `score`) sampling a scripted
// completion, and the framework's own 404 for a route a server lacks. Both vLLM and SGLang serve HTTP with FastAPI:
// an unknown path is starlette's `HTTPException(404)`, whose detail is the status phrase, answered by FastAPI's
// `http_exception_handler` (fastapi/exception_handlers.py) as `{"detail": "Not Found"}`, whatever the body.

export type Json = Record<string, unknown>;
export type Route = (body: Json, method: string) => [number, unknown];

export const NOT_FOUND: [number, unknown] = [404, { detail: "Not Found" }];

/** Serves `routes` on loopback; an unknown `METHOD path` gets FastAPI's 404. */
export async function serve(routes: Record<string, Route>) {
  const requests: { method: string; path: string; body: Json }[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const method = req.method ?? "GET";
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Json) : {};
    requests.push({ method, path, body });
    const route = routes[`${method} ${path}`];
    const [status, out] = route ? route(body, method) : NOT_FOUND;
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(out));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
