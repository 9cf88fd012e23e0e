import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { answer, type HostileSample } from "./hostile-policy.ts";

/** A served turn's parts, as a well-behaved server answers them (each hostile case changes some). */
export interface ServedParts {
  promptIds: unknown[];
  ids: unknown[];
  logprobs: unknown[];
  model: string;
}

export type ServedRoute = "/v1/chat/completions" | "/v1/completions" | "/generate";

const SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>';

/** Each sampling route's reply, in vLLM's (chat, completions) or SGLang's (generate) shape, from its parts. */
export const SERVED_REPLY: Record<ServedRoute, (p: ServedParts) => unknown> = {
  "/v1/chat/completions": (p) => ({
    model: p.model,
    prompt_token_ids: p.promptIds,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "submit", arguments: "{}" } }],
        },
        token_ids: p.ids,
        logprobs: { content: p.logprobs.map((logprob) => ({ token: "x", logprob })) },
        finish_reason: "tool_calls",
      },
    ],
  }),
  "/v1/completions": (p) => ({
    model: p.model,
    choices: [
      {
        index: 0,
        text: SUBMIT,
        token_ids: p.ids,
        prompt_token_ids: p.promptIds,
        logprobs: { token_logprobs: p.logprobs },
        finish_reason: "stop",
      },
    ],
  }),
  "/generate": (p) => ({
    text: SUBMIT,
    output_ids: p.ids,
    meta_info: {
      id: "g",
      finish_reason: { type: "stop" },
      output_token_logprobs: p.logprobs.map((lp, i) => [lp, p.ids[i], null]),
    },
  }),
};

/**
 * What the hostile served endpoint answers a sampling request: parts to shape, or one of the hostile policy's replies
 * (raw text, a status, an endless body, echoed headers).
 */
export type HostileServed = { parts: Partial<ServedParts> } | Exclude<HostileSample, { hang: true }>;

/**
 * A vLLM- and SGLang-shaped endpoint on loopback whose served models each misbehave as `script`
 * says: a request naming `<case>@v0` (vLLM's `model`, SGLang's `lora_path`) gets the case's
 * reply; the registration's model `<case>` and every `/tokenize` are answered well, so each
 * registers. `repliedAt` is when each case's last answer left.
 */
export async function startHostileServed(script: (name: string, route: ServedRoute) => HostileServed) {
  const repliedAt = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer(async (req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as Record<string, unknown>;
    const asked = String(body.model ?? body.lora_path ?? "");
    const [name, pinned] = asked.split("@v");
    const json = (out: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
    if (path === "/tokenize") return json({ tokens: [1, 2], count: 2, max_model_len: 4096 });
    const good: ServedParts = { promptIds: [1, 2], ids: [3, 4], logprobs: [-0.5, -0.5], model: asked };
    const route = path as ServedRoute;
    if (!(route in SERVED_REPLY))
      return void res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}');
    const reply = pinned === undefined ? { parts: {} } : script(name!, route);
    if ("parts" in reply) {
      json(SERVED_REPLY[route]({ ...good, ...reply.parts }));
      repliedAt.set(name!, Date.now());
    } else answer(res, reply, (at) => repliedAt.set(name!, at), timers, req.headers);
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    repliedAt,
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearInterval(t);
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
