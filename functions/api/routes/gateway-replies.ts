import type { Context } from "hono";
import { forcedSubmitReply, type RelayOut } from "@harness-s/core/gateway";

type Completion = Record<string, unknown> & {
  choices?: { index?: number; message?: Record<string, unknown>; finish_reason?: string }[];
};

const own = (model: string, message: Record<string, unknown>, finish: string): Completion => ({
  id: `chatcmpl-gw-${Date.now().toString(36)}`,
  object: "chat.completion",
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [{ index: 0, message, finish_reason: finish }],
  usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
});

/**
 * The completion the agent gets: the model's own (as its endpoint gave it); a submit the harness
 * forced, as a call of the agent's commit tool with no arguments; the end of the episode, as a
 * reply with no tool call that says why.
 */
export function completionFor(
  out: Exclude<RelayOut, { kind: "upstream-error" }>,
  model: string,
  submitTool: string,
): Completion {
  if (out.kind === "reply") return out.turn.completion as Completion;
  if (out.kind === "forced-submit") {
    const forced = forcedSubmitReply(submitTool);
    const calls = forced.toolCalls.map((call, i) => ({ id: `call_forced_${i}`, type: "function", function: call }));
    return own(model, { role: "assistant", content: forced.content, tool_calls: calls }, "tool_calls");
  }
  const why = out.reason === "budget-exhausted" ? "the harness's turn budget is spent" : "the answer was committed";
  return own(model, { role: "assistant", content: `[harness] The episode is over: ${why}.` }, "stop");
}

/**
 * The completion as OpenAI's server-sent events (`chat.completion.chunk`s, then `[DONE]`): the
 * role and text, the tool calls, the finish reason, and the usage when asked for.
 */
export function sseOf(c: Context, completion: Completion, includeUsage: boolean): Response {
  const choice = completion.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const base = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: completion.created,
    model: completion.model,
  };
  const calls =
    (message.tool_calls as { id: string; type: string; function: { name: string; arguments: string } }[] | undefined) ??
    [];
  const chunks: unknown[] = [
    {
      ...base,
      choices: [{ index: 0, delta: { role: "assistant", content: message.content ?? "" }, finish_reason: null }],
    },
    ...calls.map((call, i) => ({
      ...base,
      choices: [{ index: 0, delta: { tool_calls: [{ index: i, ...call }] }, finish_reason: null }],
    })),
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: choice.finish_reason ?? "stop" }] },
    ...(includeUsage && completion.usage ? [{ ...base, choices: [], usage: completion.usage }] : []),
  ];
  const body = `${chunks.map((x) => `data: ${JSON.stringify(x)}\n\n`).join("")}data: [DONE]\n\n`;
  c.header("content-type", "text/event-stream");
  c.header("cache-control", "no-cache");
  return c.body(body, 200);
}
