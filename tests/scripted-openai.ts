import { createServer } from "node:http";

export interface ChatRequest {
  model: string;
  messages: {
    role: string;
    content?: string | null;
    tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    tool_call_id?: string;
  }[];
  tools?: { function: { name: string } }[];
  seed?: number;
  logprobs?: boolean;
}

/** What the scripted model answers: a tool call (raw arguments text), plain content, or an HTTP error. */
export type ScriptedReply = { call: { name: string; arguments: string } } | { content: string } | { status: number };

/**
 * A small OpenAI-compatible server for tests: POST /v1/chat/completions answers with whatever
 * `script` returns for the request (tool calls, broken ones, errors) and records every request.
 */
export async function startScriptedOpenAi(script: (req: ChatRequest) => ScriptedReply | Promise<ScriptedReply>) {
  const requests: ChatRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      const parsed = JSON.parse(body) as ChatRequest;
      requests.push(parsed);
      const reply = await script(parsed);
      if ("status" in reply) {
        res
          .writeHead(reply.status, { "content-type": "application/json" })
          .end(JSON.stringify({ error: { message: "scripted failure" } }));
        return;
      }
      const message =
        "call" in reply
          ? {
              role: "assistant",
              content: null,
              tool_calls: [{ id: `call_${++n}`, type: "function", function: reply.call }],
            }
          : { role: "assistant", content: reply.content };
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: `chatcmpl-${n}`,
          object: "chat.completion",
          created: 0,
          model: parsed.model,
          choices: [
            {
              index: 0,
              finish_reason: "call" in reply ? "tool_calls" : "stop",
              message,
              logprobs: parsed.logprobs
                ? { content: [{ token: "x", logprob: -0.25, bytes: [120], top_logprobs: [] }] }
                : null,
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
  });
  // Idle keep-alive sockets stay open longer than any test: a client reusing one as the server
  // closes it would see a dropped connection that has nothing to do with what is under test.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
