import type OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { NotConfiguredError, withNotes, type ActionChoice, type DialogueTurn, type Policy, type PolicyObservation, type Rng, type UpdateResult } from "@harness-s/core";

/** One tool the model sees, and the environment action it maps to. */
export interface ToolBinding {
  /** The function name the model calls (e.g. `commit_final_answer`). */
  name: string;
  /** The environment's action (e.g. `submit`). */
  action: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface OpenAiPolicyOptions {
  model: string;
  system: string;
  tools: readonly ToolBinding[];
  temperature?: number;
  maxTokens?: number;
  /** Ask for token log-probabilities (recorded per step when the server returns them). */
  logprobs?: boolean;
  /** Parses a tool call's argument text (default JSON.parse); throw to mark the call malformed. */
  parseArguments?: (raw: string) => Record<string, unknown>;
  /** Called once per completion with the tokens it used (metering). */
  onUsage?: (usage: { promptTokens: number; completionTokens: number }) => void;
}

/** Actions for calls the environment must count as failed rounds. */
export const INVALID_TOOL_CALL = "invalid";
export const NO_TOOL_CALL = "no-tool-call";
/** A call to a function the environment does not offer: `unknown:<name>`. */
export const UNKNOWN_TOOL_PREFIX = "unknown:";

/**
 * A policy served by any OpenAI-compatible endpoint (vLLM, a hosted API): each turn it rebuilds
 * the dialogue from the observation, asks for one tool call, and maps it to an environment action.
 * A malformed call (bad JSON, an unknown function, no call at all) becomes an `invalid`,
 * `unknown:<name>` or `no-tool-call` action — a failed round, never a crash. The next prompt
 * replays what the model wrote: its text beside the call and the argument text as generated. It
 * samples at temperature 1 unless told otherwise (a group's rollouts differ); it only samples, so
 * `update` refuses (train with `TokenPolicy` against a policy worker), and its version is the
 * `@v<n>` of a worker model name.
 *
 * @example
 * const policy = new OpenAiToolPolicy(new OpenAI({ baseURL, apiKey }), { model: "qwen", system, tools });
 */
export class OpenAiToolPolicy implements Policy {
  constructor(
    private readonly client: OpenAI,
    private readonly options: OpenAiPolicyOptions,
  ) {}

  /** The version in the model name (`{id}@v{n}`, as the policy worker's façade names them), else 0. */
  version(): number {
    const m = /@v(\d+)$/.exec(this.options.model);
    return m ? Number(m[1]) : 0;
  }

  update(): Promise<UpdateResult> {
    return Promise.reject(new NotConfiguredError("this policy only samples from an OpenAI-compatible server; to train, use TokenPolicy against a protocol-v2 policy worker"));
  }

  /** The chat messages for an observation (exported for tests and logs). */
  messages(obs: PolicyObservation): ChatCompletionMessageParam[] {
    const byAction = new Map(this.options.tools.map((t) => [t.action, t.name]));
    const msgs: ChatCompletionMessageParam[] = [{ role: "system", content: this.options.system }];
    const turns: DialogueTurn[] = [...(obs.history ?? []), { role: "env", text: withNotes(obs.text ?? "", obs.notes ?? []) }];
    let pendingCall: string | undefined;
    turns.forEach((turn, i) => {
      if (turn.role === "env") {
        if (i === 0) msgs.push({ role: "user", content: [obs.instruction ?? "", turn.text].filter(Boolean).join("\n\n") });
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
      const name = turn.action === INVALID_TOOL_CALL ? String(args.name ?? "") : (byAction.get(turn.action ?? "") ?? turn.action?.replace(UNKNOWN_TOOL_PREFIX, "") ?? "");
      const opaque = turn.action === INVALID_TOOL_CALL || turn.action?.startsWith(UNKNOWN_TOOL_PREFIX);
      // The arguments as the model wrote them (re-serialising would change the next prompt).
      const raw = turn.raw ?? (opaque ? String(args.raw ?? "") : JSON.stringify(args));
      msgs.push({ role: "assistant", content: turn.text || null, tool_calls: [{ id: pendingCall, type: "function", function: { name, arguments: raw } }] });
    });
    return msgs;
  }

  async act(obs: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    const tools: ChatCompletionTool[] = this.options.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }));
    const completion = await this.client.chat.completions.create({
      model: this.options.model,
      messages: this.messages(obs),
      tools,
      tool_choice: "auto",
      temperature: this.options.temperature ?? 1,
      max_tokens: this.options.maxTokens ?? 1024,
      seed: rng.int(2 ** 31),
      ...(this.options.logprobs === false ? {} : { logprobs: true }),
    });
    if (completion.usage) this.options.onUsage?.({ promptTokens: completion.usage.prompt_tokens, completionTokens: completion.usage.completion_tokens });
    const choice = completion.choices?.[0];
    const logProb = (choice?.logprobs?.content ?? []).reduce((s, t) => s + (Number.isFinite(t.logprob) ? t.logprob : 0), 0);
    const call = choice?.message?.tool_calls?.find((c) => c.type === "function");
    const text = choice?.message?.content ?? "";
    if (call?.type !== "function") return { action: NO_TOOL_CALL, args: { content: text }, logProb };
    const said = { text, rawArguments: call.function.arguments };
    const binding = this.options.tools.find((t) => t.name === call.function.name);
    if (!binding) return { action: `${UNKNOWN_TOOL_PREFIX}${call.function.name}`, args: { raw: call.function.arguments }, logProb, ...said };
    try {
      const args = (this.options.parseArguments ?? JSON.parse)(call.function.arguments || "{}");
      if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("arguments are not an object");
      return { action: binding.action, args, logProb, ...said };
    } catch (err) {
      return { action: INVALID_TOOL_CALL, args: { name: call.function.name, raw: call.function.arguments, error: (err as Error).message }, logProb, ...said };
    }
  }
}
