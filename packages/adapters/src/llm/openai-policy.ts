import type OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import {
  NotConfiguredError,
  type ActionChoice,
  type Policy,
  type PolicyObservation,
  type Rng,
  type UpdateResult,
} from "@harness-s/core";
import { choiceFromReply, offeredTools, renderChat, type ToolBinding } from "@harness-s/core/gateway";

export type { ToolBinding } from "@harness-s/core/gateway";
export { INVALID_TOOL_CALL, NO_TOOL_CALL, UNKNOWN_TOOL_PREFIX } from "@harness-s/core/gateway";

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

/**
 * A policy served by any OpenAI-compatible endpoint (vLLM, a hosted API): each turn it rebuilds
 * the dialogue from the observation, asks for one tool call, and maps it to an environment action.
 * A malformed call (bad JSON, an unknown function, no call at all) becomes an `invalid`,
 * `unknown:<name>` or `no-tool-call` action — a failed round, never a crash. The next prompt
 * replays what the model wrote: its text beside the call and the argument text as generated. It
 * samples at temperature 1 unless told otherwise (a group's rollouts differ); it only samples, so
 * `update` refuses (train with `TokenTrainer` against a policy worker), and its version is the
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
    return Promise.reject(
      new NotConfiguredError(
        "this policy only samples from an OpenAI-compatible server; to train, use TokenTrainer against a protocol-v2 policy worker",
      ),
    );
  }

  /** The chat messages for an observation (exported for tests and logs). */
  messages(obs: PolicyObservation): ChatCompletionMessageParam[] {
    return renderChat(
      obs,
      [{ role: "system", content: this.options.system }],
      this.options.tools,
    ) as ChatCompletionMessageParam[];
  }

  async act(obs: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    const tools: ChatCompletionTool[] = offeredTools(this.options.tools, obs.toolNotes);
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
    if (completion.usage)
      this.options.onUsage?.({
        promptTokens: completion.usage.prompt_tokens,
        completionTokens: completion.usage.completion_tokens,
      });
    const choice = completion.choices?.[0];
    const logProb = (choice?.logprobs?.content ?? []).reduce(
      (s, t) => s + (Number.isFinite(t.logprob) ? t.logprob : 0),
      0,
    );
    const calls = (choice?.message?.tool_calls ?? []).flatMap((c) =>
      c.type === "function" ? [{ name: c.function.name, arguments: c.function.arguments }] : [],
    );
    return choiceFromReply(
      { content: choice?.message?.content ?? null, toolCalls: calls },
      this.options.tools,
      logProb,
      this.options.parseArguments,
    );
  }
}
