import { createServer, type ServerResponse } from "node:http";

/** What the hostile endpoint does with one request. */
export type HostileReply =
  | { json: unknown; status?: number }
  | { raw: string; status: number; type?: string }
  /** Headers, then `chunk` every `everyMs`, forever (a body trickled a byte at a time). */
  | { trickle: { chunk: string; everyMs: number } }
  /** Headers, then 64 KiB chunks as fast as the socket takes them, forever. */
  | { endless: true };

export interface Sent {
  /** Bytes of body the server managed to write. */
  written: number;
  /** When the client closed the connection (ms since the server started it). */
  closedAfterMs?: number;
}

/** A completion with one choice: content or one tool call, and the usage it reports. */
export function completion(opts: {
  content?: string | null;
  call?: { name: string; arguments: string };
  usage?: unknown;
}) {
  const message = opts.call
    ? {
        role: "assistant",
        content: null,
        tool_calls: [{ id: `call_${opts.call.name}`, type: "function", function: opts.call }],
      }
    : { role: "assistant", content: opts.content ?? null };
  return {
    id: "chatcmpl-h",
    object: "chat.completion",
    created: 0,
    model: "m",
    choices: [{ index: 0, finish_reason: opts.call ? "tool_calls" : "stop", message, logprobs: null }],
    usage: opts.usage ?? { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

/**
 * An OpenAI-compatible endpoint that misbehaves as `script` says (trickled and endless bodies,
 * error texts with secrets in them, absurd usage counts), recording each request's body and what
 * it sent back: how many bytes, and when the client hung up.
 */
export async function startHostileOpenAi(script: (body: Record<string, unknown>) => HostileReply) {
  const requests: Record<string, unknown>[] = [];
  const sent: Sent[] = [];
  const timers = new Set<ReturnType<typeof setInterval>>();
  const stream = (res: ServerResponse, record: Sent, next: () => string | Buffer, everyMs: number) => {
    const started = Date.now();
    res.writeHead(200, { "content-type": "application/json" });
    const stop = () => {
      clearInterval(timer);
      timers.delete(timer);
      record.closedAfterMs ??= Date.now() - started;
    };
    const timer = setInterval(
      () => {
        if (res.destroyed) return stop();
        // Endless: keep the socket's buffer full without holding the whole body in memory here.
        while (!res.destroyed && res.writableLength < 1 << 20) {
          const piece = next();
          record.written += piece.length;
          res.write(piece);
          if (everyMs > 0) break;
        }
      },
      Math.max(everyMs, 1),
    );
    timers.add(timer);
    res.on("close", stop);
  };
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const parsed = body ? (JSON.parse(body) as Record<string, unknown>) : {};
      requests.push(parsed);
      const record: Sent = { written: 0 };
      sent.push(record);
      const reply = script(parsed);
      if ("json" in reply) {
        const text = JSON.stringify(reply.json);
        record.written = text.length;
        res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(text);
      } else if ("raw" in reply) {
        record.written = reply.raw.length;
        res.writeHead(reply.status, { "content-type": reply.type ?? "application/json" }).end(reply.raw);
      } else if ("trickle" in reply) stream(res, record, () => reply.trickle.chunk, reply.trickle.everyMs);
      else {
        const chunk = Buffer.alloc(64 << 10, 0x20);
        stream(res, record, () => chunk, 0);
      }
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    sent,
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearInterval(t);
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
