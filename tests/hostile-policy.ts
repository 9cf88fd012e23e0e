import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the hostile protocol-v2 endpoint answers to one sample request. */
export type HostileSample =
  | { json: unknown; status?: number /** Answered after this long (a slow model). */; delayMs?: number }
  | { raw: string; status: number }
  /** Never answers (the connection stays open until the client gives up). */
  | { hang: true }
  /** Headers, then 64 KiB chunks as fast as the socket takes them, forever. */
  | { endless: true }
  /** The request's own headers echoed back in an error body, with this status. */
  | { echoHeaders: number };

/** A sample as a well-behaved worker answers it: one call of `tool`, ids and log-probabilities of equal length. */
export function goodSample(
  opts: { tool?: string; version?: number; promptIds?: number[]; ids?: number[]; logprobs?: number[] } = {},
) {
  const ids = opts.ids ?? [3, 4];
  return {
    policy_version: opts.version ?? 0,
    prompt_ids: opts.promptIds ?? [1, 2],
    completion: {
      ids,
      logprobs: opts.logprobs ?? ids.map(() => -0.5),
      text: "",
      content: "",
      finish_reason: "stop",
      tool_calls: [{ id: "c1", type: "function", function: { name: opts.tool ?? "submit", arguments: "{}" } }],
    },
  };
}

export interface HostileRequest {
  policy: string;
  path: string;
  body: Record<string, unknown>;
  headers: IncomingMessage["headers"];
  at: number;
}

/**
 * A protocol-v2 policy endpoint on loopback whose policies each misbehave as `script` says for
 * their samples (keyed by the policy id in the path: one server, one behaviour per registered
 * endpoint). Its policies' state (`GET`) is well-formed at `version` (stating `vocabSize` when
 * given), so registration succeeds.
 * Every request is recorded with when it arrived, and `repliedAt` when each policy's last
 * answer left (the moment a reply "decided" a slot).
 */
export async function startHostilePolicy(
  script: (policy: string, req: HostileRequest, nth: number) => HostileSample,
  version = 0,
  vocabSize?: number,
) {
  const requests: HostileRequest[] = [];
  const held: { res: ServerResponse; headers: IncomingMessage["headers"]; policy: string }[] = [];
  const repliedAt = new Map<string, number>();
  const counts = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? "/", "http://x");
    const parts = url.pathname.split("/").map(decodeURIComponent);
    const policy = parts[3] ?? "";
    let body: Record<string, unknown> = {};
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {};
    } catch {
      body = {};
    }
    const json = (status: number, out: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(out));
      repliedAt.set(policy, Date.now());
    };
    const tokenizer = { name: "hostile", eos_ids: [0], ...(vocabSize ? { vocab_size: vocabSize } : {}) };
    if (req.method === "GET")
      return json(200, { policy_id: policy, version, tokenizer, capabilities: { sample: true } });
    if (req.method === "DELETE") return json(200, { closed: true });
    const record: HostileRequest = { policy, path: url.pathname, body, headers: req.headers, at: Date.now() };
    requests.push(record);
    const nth = counts.get(policy) ?? 0;
    counts.set(policy, nth + 1);
    const reply = script(policy, record, nth);
    if ("hang" in reply) return held.push({ res, headers: req.headers, policy });
    if ("delayMs" in reply && reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    answer(res, reply, (at) => repliedAt.set(policy, at), timers, req.headers);
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    repliedAt,
    samples: (policy: string) => requests.filter((r) => r.policy === policy && r.path.endsWith("/sample")).length,
    /** Requests held unanswered now (`hang`), by policy. */
    hanging: (policy: string) =>
      held.filter((h) => h.policy === policy && !h.res.writableEnded && !h.res.destroyed).length,
    /** Answers every request held so far with `reply`. */
    release: (reply: Exclude<HostileSample, { hang: true }>) => {
      for (const h of held.splice(0))
        if (!h.res.destroyed) answer(h.res, reply, (at) => repliedAt.set(h.policy, at), timers, h.headers);
    },
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearInterval(t);
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function answer(
  res: ServerResponse,
  reply: Exclude<HostileSample, { hang: true }>,
  replied: (at: number) => void,
  timers: Set<NodeJS.Timeout>,
  headers: IncomingMessage["headers"],
): void {
  if ("endless" in reply) {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"policy_version":0,"prompt_ids":[');
    const chunk = Buffer.alloc(64 << 10, 0x20);
    const timer = setInterval(() => {
      if (res.destroyed) {
        clearInterval(timer);
        return replied(Date.now());
      }
      res.write(chunk);
    }, 1);
    timers.add(timer);
    return;
  }
  if ("echoHeaders" in reply) {
    res
      .writeHead(reply.echoHeaders, { "content-type": "application/json" })
      .end(JSON.stringify({ error: { code: "BAD_REQUEST", message: `headers received: ${JSON.stringify(headers)}` } }));
  } else if ("raw" in reply) res.writeHead(reply.status, { "content-type": "application/json" }).end(reply.raw);
  else res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(JSON.stringify(reply.json));
  replied(Date.now());
}

/**
 * The hostile endpoint of {@link startHostilePolicy} answering in process: a `fetch` with the same state, sample
 * replies and echoes, no socket (a stubbed transport for the client's tables; `hang` is not offered). Its endless body
 * is a stream of 64 KiB chunks that ends only when the reader cancels it.
 */
export function hostilePolicyFetch(
  script: (policy: string, body: Record<string, unknown>) => Exclude<HostileSample, { hang: true }>,
  version = 0,
  vocabSize?: number,
): typeof fetch {
  const json = (status: number, out: unknown) =>
    new Response(JSON.stringify(out), { status, headers: { "content-type": "application/json" } });
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(typeof input === "string" || input instanceof URL ? String(input) : input.url);
    const policy = decodeURIComponent(url.pathname.split("/")[3] ?? "");
    const method = init?.method ?? "GET";
    const tokenizer = { name: "hostile", eos_ids: [0], ...(vocabSize ? { vocab_size: vocabSize } : {}) };
    if (method === "GET") return json(200, { policy_id: policy, version, tokenizer, capabilities: { sample: true } });
    if (method === "DELETE") return json(200, { closed: true });
    const body = init?.body ? (JSON.parse(String(init.body)) as Record<string, unknown>) : {};
    const reply = script(policy, body);
    if ("endless" in reply) {
      const chunk = new Uint8Array(64 << 10).fill(0x20);
      const stream = new ReadableStream<Uint8Array>({
        start: (c) => c.enqueue(new TextEncoder().encode('{"policy_version":0,"prompt_ids":[')),
        pull: (c) => c.enqueue(chunk),
      });
      return new Response(stream, { status: 200, headers: { "content-type": "application/json" } });
    }
    if ("echoHeaders" in reply) {
      const headers = Object.fromEntries(new Headers(init?.headers).entries());
      return json(reply.echoHeaders, {
        error: { code: "BAD_REQUEST", message: `headers received: ${JSON.stringify(headers)}` },
      });
    }
    if ("raw" in reply)
      return new Response(reply.raw, { status: reply.status, headers: { "content-type": "application/json" } });
    return json(reply.status ?? 200, reply.json);
  }) as typeof fetch;
}
