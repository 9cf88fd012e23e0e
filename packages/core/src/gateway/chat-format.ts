import { withNotes } from "../rollout/run-episode.ts";
import type { DialogueTurn, PolicyObservation } from "../rollout/types.ts";
import type { ActionChoice } from "../ports.ts";

/** One tool the model sees, and the environment action it maps to. */
export interface ToolBinding {
  /** The function name the model calls (e.g. `commit_final_answer`). */
  name: string;
  /** The environment's action (e.g. `submit`). */
  action: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Actions for calls the environment must count as failed rounds. */
export const INVALID_TOOL_CALL = "invalid";
export const NO_TOOL_CALL = "no-tool-call";
/** A call to a function the environment does not offer: `unknown:<name>`. */
export const UNKNOWN_TOOL_PREFIX = "unknown:";

/** A chat message as OpenAI-compatible servers take it (only the fields this code writes). */
export interface ChatMsg {
  role: "system" | "user" | "assistant" | "tool" | "developer";
  content: string | null;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** What a model answered: its text and its tool calls, as the chat completion holds them. */
export interface ModelReply {
  content: string | null;
  toolCalls: { name: string; arguments: string }[];
}

/** A submit the harness forced, as the agent gets it: a call of its commit tool with no arguments. */
export function forcedSubmitReply(submitTool: string): ModelReply {
  return { content: null, toolCalls: [{ name: submitTool, arguments: "{}" }] };
}

/**
 * The chat messages for a text observation: `preamble` (the system message, or an agent's own
 * opening messages), the first env message as the user's (the instruction, with the harness's
 * system text, then the first observation), then each call as an assistant message and each
 * tool output, with the harness's notes, as its tool message. The model's text and argument text
 * are replayed exactly as written (re-serialising would change the next prompt).
 *
 * @example
 * renderChat(obs, [{ role: "system", content: system }], dbbenchTools);
 */
export function renderChat(
  obs: PolicyObservation,
  preamble: readonly ChatMsg[],
  tools: readonly ToolBinding[],
): ChatMsg[] {
  const byAction = new Map(tools.map((t) => [t.action, t.name]));
  const msgs: ChatMsg[] = [...preamble];
  const turns: DialogueTurn[] = [
    ...(obs.history ?? []),
    { role: "env", text: withNotes(obs.text ?? "", obs.notes ?? []) },
  ];
  let pendingCall: string | undefined;
  turns.forEach((turn, i) => {
    if (turn.role === "env") {
      if (i === 0)
        msgs.push({ role: "user", content: [obs.instruction ?? "", turn.text].filter(Boolean).join("\n\n") });
      else if (pendingCall) msgs.push({ role: "tool", tool_call_id: pendingCall, content: turn.text });
      else msgs.push({ role: "user", content: turn.text });
      pendingCall = undefined;
      return;
    }
    const args = turn.args ?? {};
    if (turn.action === NO_TOOL_CALL) {
      msgs.push({ role: "assistant", content: String(args.content ?? "") });
      return;
    }
    pendingCall = `call_${i}`;
    const name =
      turn.action === INVALID_TOOL_CALL
        ? String(args.name ?? "")
        : (byAction.get(turn.action ?? "") ?? turn.action?.replace(UNKNOWN_TOOL_PREFIX, "") ?? "");
    const opaque = turn.action === INVALID_TOOL_CALL || turn.action?.startsWith(UNKNOWN_TOOL_PREFIX);
    const raw = turn.raw ?? (opaque ? String(args.raw ?? "") : JSON.stringify(args));
    msgs.push({
      role: "assistant",
      content: turn.text || null,
      tool_calls: [{ id: pendingCall, type: "function", function: { name, arguments: raw } }],
    });
  });
  return msgs;
}

/**
 * The environment action for a model's reply: its first tool call mapped through `tools`. A
 * malformed call (bad arguments, an unknown function, no call at all) becomes an `invalid`,
 * `unknown:<name>` or `no-tool-call` action: a failed round, never a crash.
 *
 * @example
 * choiceFromReply({ content: null, toolCalls: [{ name: "execute_sql", arguments: '{"query":"SELECT 1"}' }] }, tools, -3.2);
 */
export function choiceFromReply(
  reply: ModelReply,
  tools: readonly ToolBinding[],
  logProb: number,
  parseArguments: (raw: string) => Record<string, unknown> = JSON.parse,
): ActionChoice {
  const call = reply.toolCalls[0];
  const text = reply.content ?? "";
  if (!call) return { action: NO_TOOL_CALL, args: { content: text }, logProb };
  const said = { text, rawArguments: call.arguments };
  const binding = tools.find((t) => t.name === call.name);
  if (!binding)
    return { action: `${UNKNOWN_TOOL_PREFIX}${call.name}`, args: { raw: call.arguments }, logProb, ...said };
  try {
    const args = parseArguments(call.arguments || "{}");
    if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("arguments are not an object");
    return { action: binding.action, args, logProb, ...said };
  } catch (err) {
    return {
      action: INVALID_TOOL_CALL,
      args: { name: call.name, raw: call.arguments, error: (err as Error).message },
      logProb,
      ...said,
    };
  }
}

/** The tools as the model is offered them, each description followed by the harness's note for it. */
export function offeredTools(tools: readonly ToolBinding[], notes: Readonly<Record<string, string>> = {}) {
  return tools.map((t) => {
    const note = notes[t.name] ?? notes[t.action];
    return {
      type: "function" as const,
      function: {
        name: t.name,
        description: note ? `${t.description}\n${note}` : t.description,
        parameters: t.parameters,
      },
    };
  });
}
