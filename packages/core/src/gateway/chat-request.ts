import { z } from "zod";
import { Id, Name } from "../names.ts";
import { MAX_TOKENS_PER_CALL } from "../billing/metering.ts";
import type { ChatMsg } from "./chat-format.ts";

const Text = z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() })), z.null()]);
const IncomingMessage = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: Text.optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string(),
        type: z.literal("function"),
        function: z.object({ name: z.string(), arguments: z.string() }),
      }),
    )
    .optional(),
  tool_call_id: z.string().optional(),
});
const IncomingTool = z.looseObject({
  type: z.literal("function"),
  function: z.object({
    name: z.string().min(1).max(64),
    description: z.string().max(8_000).default(""),
    parameters: z.record(z.string(), z.unknown()).default({}),
  }),
});

const tokens = z.number().int().min(1).max(MAX_TOKENS_PER_CALL);
/** A chat-completions temperature, with OpenAI's bounds (what an OpenAI-compatible endpoint takes). */
export const ChatTemperature = z.number().min(0).max(2);

/**
 * The sampling fields the gateway knows, with OpenAI's bounds: a value outside them is the
 * agent's mistake, answered 400 here instead of being sent on (other fields pass through, and an
 * endpoint that refuses one is UPSTREAM_REJECTED). One reply per request: the harness acts on it.
 */
const Sampling = {
  temperature: ChatTemperature.nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_tokens: tokens.nullable().optional(),
  max_completion_tokens: tokens.nullable().optional(),
  n: z.literal(1).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  stop: z
    .union([z.string().max(1_000), z.array(z.string().max(1_000)).max(4)])
    .nullable()
    .optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
};

/** An OpenAI chat completion request as an agent sends it to the gateway; sampling fields pass through. */
export const GatewayChatRequest = z.looseObject({
  model: z.string().min(1).max(200),
  messages: z.array(IncomingMessage).min(1).max(2_000),
  tools: z.array(IncomingTool).max(128).optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).optional(),
  ...Sampling,
});
export type GatewayChatRequest = z.infer<typeof GatewayChatRequest>;

/** What an agent may tell the gateway in headers (`x-harness-s-…`): the episode and the task's features. */
export const GatewayRequestMeta = z.object({
  episode: Id.optional(),
  taskId: Id.optional(),
  family: Name.optional(),
  tags: z.array(Name).max(50).default([]),
});
export type GatewayRequestMeta = z.infer<typeof GatewayRequestMeta>;

const textOf = (content: z.infer<typeof Text> | undefined): string | null =>
  content == null ? null : typeof content === "string" ? content : content.map((p) => p.text ?? "").join("");

/** An agent's message as the gateway's chat format holds it (content parts joined into one text). */
export const toChat = (m: z.infer<typeof IncomingMessage>): ChatMsg => ({
  role: m.role,
  content: textOf(m.content),
  ...(m.tool_calls
    ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: "function" as const, function: c.function })) }
    : {}),
  ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
});

/**
 * The request's sampling parameters, forwarded to the model endpoint (messages, tools and streaming are the gateway's).
 */
export function samplingParams(req: GatewayChatRequest): Record<string, unknown> {
  const { messages: _m, tools: _t, stream: _s, stream_options: _o, tool_choice: _c, ...rest } = req;
  return rest;
}
