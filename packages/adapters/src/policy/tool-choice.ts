import type { ActionChoice, StepTokens } from "@harness-s/core";
import { INVALID_TOOL_CALL, NO_TOOL_CALL, UNKNOWN_TOOL_PREFIX } from "../llm/openai-policy.ts";

/**
 * A sampled turn as the policy's action is read from it: its text, its tool calls (parsed where the endpoint or its
 * parser could), and why a call could not be read.
 */
export interface SampledCall {
  text: string;
  content: string;
  toolCalls?: readonly { name: string; arguments: string }[];
  parseError?: string;
}

/**
 * The action a sampled turn takes: its first tool call, mapped back from the function name the
 * model sees (`toolNames`); a call that could not be read, an unknown tool or no call at all is a
 * failed round (`invalid`, `unknown:<name>`, `no-tool-call`). The turn's ids ride along.
 *
 * @example
 * choiceOf({ text, content: "", toolCalls: [{ name: "submit", arguments: "{}" }] }, ["submit"], {}, -1.2, tokens);
 */
export function choiceOf(
  c: SampledCall,
  tools: readonly string[],
  toolNames: Readonly<Record<string, string>>,
  logProb: number,
  tokens: StepTokens,
): ActionChoice {
  if (c.parseError) return { action: INVALID_TOOL_CALL, args: { raw: c.text, error: c.parseError }, logProb, tokens };
  const call = c.toolCalls?.[0];
  if (!call) return { action: NO_TOOL_CALL, args: { content: c.content }, logProb, tokens };
  const action = Object.entries(toolNames).find(([, name]) => name === call.name)?.[0] ?? call.name;
  if (!tools.includes(action))
    return { action: `${UNKNOWN_TOOL_PREFIX}${call.name}`, args: { raw: call.arguments }, logProb, tokens };
  try {
    return { action, args: JSON.parse(call.arguments || "{}") as Record<string, unknown>, logProb, tokens };
  } catch (err) {
    return { action: INVALID_TOOL_CALL, args: { raw: call.arguments, error: (err as Error).message }, logProb, tokens };
  }
}

const HERMES = /<tool_call>([\s\S]*?)<\/tool_call>/g;

/**
 * Tool calls read from a completion's text in the Hermes format (Qwen2.5, Hermes, this project's
 * tiny model: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, any number), as the policy
 * worker's `toolcalls.py` reads them: where a tokens-in endpoint returns text only, or a server
 * was started without a tool-call parser. A malformed call is a parse error, never thrown.
 *
 * @example
 * hermesToolCalls('<tool_call>{"name": "submit", "arguments": {}}</tool_call>'); // { content: "", toolCalls: [{ name: "submit", arguments: "{}" }] }
 */
export function hermesToolCalls(text: string): Omit<SampledCall, "text"> {
  const bodies = [...text.matchAll(HERMES)].map((m) => m[1]!);
  const content = text.replace(HERMES, "").trim();
  if (!bodies.length)
    return { content, ...(text.includes("<tool_call>") ? { parseError: "unterminated <tool_call>" } : {}) };
  const toolCalls: { name: string; arguments: string }[] = [];
  for (const [i, body] of bodies.entries()) {
    let call: unknown;
    try {
      call = JSON.parse(body);
    } catch (err) {
      return { content, parseError: `tool call ${i} is not JSON: ${(err as Error).message}` };
    }
    const { name, arguments: args = {} } = (call ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof name !== "string" || typeof args !== "object" || args === null || Array.isArray(args))
      return { content, parseError: `tool call ${i} needs {"name": string, "arguments": object}` };
    toolCalls.push({ name, arguments: JSON.stringify(args) });
  }
  return { content, toolCalls };
}
