import { createHash } from "node:crypto";
import type { ChatMsg, ModelReply } from "./chat-format.ts";

/**
 * A message as the gateway compares it: its role, its text (null and "" alike), and its tool
 * calls by name and argument text (call ids are the agent's to rename). Two requests of one
 * conversation agree on every message they both hold.
 */
export function messageFingerprint(m: Pick<ChatMsg, "role" | "content" | "tool_calls">): string {
  const calls = (m.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]);
  return JSON.stringify([m.role, m.content ?? "", calls]);
}

/** The fingerprint of the assistant message an agent echoes for a reply the gateway gave it. */
export function replyFingerprint(reply: ModelReply): string {
  return messageFingerprint({
    role: "assistant",
    content: reply.content,
    tool_calls: reply.toolCalls.map((c, i) => ({ id: `${i}`, type: "function", function: c })),
  });
}

/** One hash of a conversation's opening messages (up to and with the first user message). */
export function openingFingerprint(keyId: string, opening: readonly ChatMsg[]): string {
  return createHash("sha256")
    .update(JSON.stringify([keyId, opening.map(messageFingerprint)]))
    .digest("hex")
    .slice(0, 32);
}

/** How a request stands to the conversation an episode recorded. */
export type ConversationMatch = "repeat" | "extends" | "mismatch";

/**
 * Whether `messages` repeats the recorded conversation (the same request again: its answer was
 * lost), extends it exactly (every recorded message unchanged, then the reply the gateway gave
 * as the assistant's message, then the agent's new messages, none of them an assistant's), or
 * neither. `expected` is the fingerprint of the reply handed out (none after an upstream error).
 */
export function matchConversation(
  recorded: readonly string[],
  expected: string | undefined,
  messages: readonly ChatMsg[],
): ConversationMatch {
  if (messages.length < recorded.length) return "mismatch";
  for (let i = 0; i < recorded.length; i++) if (messageFingerprint(messages[i]!) !== recorded[i]) return "mismatch";
  if (messages.length === recorded.length) return "repeat";
  if (expected === undefined || messages.length < recorded.length + 2) return "mismatch";
  if (messageFingerprint(messages[recorded.length]!) !== expected) return "mismatch";
  return messages.slice(recorded.length + 1).some((m) => m.role === "assistant") ? "mismatch" : "extends";
}
