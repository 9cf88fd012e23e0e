import type { TrajectoryStep } from "@harness-s/core";
import {
  AnyDetokenizeReply,
  ChatTokenReply,
  PromptLogprobsReply,
  SglangInputLogprobsReply,
  TokenizeReply,
  type ChatMessage,
  type ToolSchema,
} from "@harness-s/core/protocol";
import { PolicyReplyInvalidError } from "../errors.ts";
import { NO_TOOL_CALL } from "../llm/openai-policy.ts";
import { adapterField, type ServedTarget } from "./served-modes.ts";
import { firstMessages, nextMessage, underBase } from "./token-render.ts";
import { hermesToolCalls } from "./tool-choice.ts";

/**
 * How a served kind re-scores a rescue's completions in H0's context: its template's render of messages (with the
 * generation prompt), each id's log-probability after the ids before it, and a completion's text.
 */
export interface BaseScoring {
  render(target: ServedTarget, messages: ChatMessage[], tools: ToolSchema[]): Promise<number[]>;
  /** One log-probability an id, the first 0 (nothing before it). */
  score(target: ServedTarget, ids: number[]): Promise<number[]>;
  detokenize(target: ServedTarget, ids: number[]): Promise<string>;
}

/**
 * One log-probability an id from a reply's per-position list (the first position null): the id's own entry, or the
 * reply is refused.
 */
function aligned(path: string, ids: readonly number[], at: (i: number) => number | null | undefined): number[] {
  return ids.map((id, i) => {
    if (i === 0) return 0;
    const lp = at(i);
    if (lp === undefined || lp === null)
      throw new PolicyReplyInvalidError(`POST ${path}: no log-probability for prompt id ${id} at position ${i}`);
    return lp;
  });
}

/**
 * vLLM: `/tokenize` renders messages with the generation prompt (its own chat template); `/v1/completions` with
 * `prompt_logprobs: 0` scores an id prompt (one token sampled beside, as vLLM samples at least one).
 */
export const VLLM_BASE: BaseScoring = {
  async render({ client, model }, messages, tools) {
    const body = {
      model,
      messages,
      add_generation_prompt: true,
      add_special_tokens: false,
      ...(tools.length ? { tools } : {}),
    };
    return (await client.post("/tokenize", body, TokenizeReply, model)).tokens;
  },
  async score({ client, model }, ids) {
    const body = { model, prompt: ids, max_tokens: 1, prompt_logprobs: 0, add_special_tokens: false, temperature: 1 };
    const reply = await client.post("/v1/completions", body, PromptLogprobsReply, model);
    const list = reply.choices[0]!.prompt_logprobs ?? [];
    if (list.length !== ids.length)
      throw new PolicyReplyInvalidError(
        `POST /v1/completions: ${list.length} prompt log-probabilities for ${ids.length} prompt ids`,
      );
    return aligned("/v1/completions", ids, (i) => list[i]?.[String(ids[i])]?.logprob);
  },
  async detokenize({ client, model }, ids) {
    return client.post("/detokenize", { model, tokens: ids }, AnyDetokenizeReply, model);
  },
};

/**
 * SGLang: its chat completions render messages (the prompt's ids per choice, `return_prompt_token_ids`; one token
 * sampled beside), `/generate` with `logprob_start_len: 0` scores input ids (`meta_info.input_token_logprobs`), and
 * `/v1/detokenize` (SGLang routes it beside `/detokenize`: http_server.py @0025436e) answers `{text}`. Its `/tokenize` is not used: it takes text only in older releases.
 */
export const SGLANG_BASE: BaseScoring = {
  async render(target, messages, tools) {
    const { client, model, chatPath, chatExtras } = target;
    // The kind's own chat fields (SGLANG_WIRE: ids per choice, the adapter by lora_path), as the episode sends them.
    const body = { model, messages, ...(tools.length ? { tools } : {}), max_tokens: 1, temperature: 1, ...chatExtras };
    const ids = (await client.post(chatPath, body, ChatTokenReply, model)).choices[0]!.prompt_token_ids;
    if (!ids?.length)
      throw new PolicyReplyInvalidError(
        `POST ${chatPath}: no prompt_token_ids in the choice (return_prompt_token_ids)`,
      );
    return ids;
  },
  async score(target, ids) {
    const body = {
      input_ids: ids,
      sampling_params: { max_new_tokens: 1, temperature: 1 },
      return_logprob: true,
      logprob_start_len: 0,
      ...adapterField(target.model, target.baseModel),
    };
    const list = (await target.client.post("/generate", body, SglangInputLogprobsReply, target.model)).meta_info
      .input_token_logprobs;
    if (list.length !== ids.length || list.some(([, id], i) => id !== ids[i]))
      throw new PolicyReplyInvalidError("POST /generate: meta_info.input_token_logprobs does not name the input ids");
    return aligned("/generate", ids, (i) => list[i]![0]);
  },
  async detokenize({ client, model }, ids) {
    return client.post("/v1/detokenize", { model, tokens: ids, skip_special_tokens: true }, AnyDetokenizeReply, model);
  },
};

/** A turn of a rollout in H0's context: its whole prompt there, its completion, their log-probabilities there. */
export interface BaseTurn {
  promptIds: number[];
  completionIds: number[];
  logprobs: number[];
}

/**
 * A rescued rollout's turns in H0's context, messages in: each turn's conversation as H0 would have shown it (no
 * sibling notes), the earlier completions as the assistant's messages (their text, its tool calls read as the episode
 * read them), rendered by the server's template; the same completion ids scored after it. A turn whose prompt does not
 * extend the ids before it starts another row (`segmentedDatums`), as messages in does when sampling.
 */
export async function baseTurns(
  steps: readonly TrajectoryStep[],
  context: { system: string; toolSchemas: (tools: readonly string[]) => ToolSchema[] },
  target: ServedTarget,
  scoring: BaseScoring,
): Promise<BaseTurn[]> {
  const base = steps.map((step) => underBase(step.observation));
  const tools = context.toolSchemas(base[0]!.tools);
  const messages: ChatMessage[] = firstMessages(context.system, base[0]!);
  const turns: BaseTurn[] = [];
  for (let j = 0; j < steps.length; j++) {
    if (j > 0) {
      const text = await scoring.detokenize(target, steps[j - 1]!.tokens!.completionIds);
      const parsed = hermesToolCalls(text);
      const calls = parsed.toolCalls?.map((c, i) => ({
        id: `call${i}`,
        type: "function",
        function: { name: c.name, arguments: c.arguments },
      }));
      messages.push({ role: "assistant", content: parsed.content, ...(calls ? { tool_calls: calls } : {}) });
      messages.push(nextMessage(base[j]!, steps[j - 1]!.action !== NO_TOOL_CALL));
    }
    const promptIds = await scoring.render(target, messages, tools);
    const completionIds = steps[j]!.tokens!.completionIds;
    const scored = await scoring.score(target, [...promptIds, ...completionIds]);
    turns.push({ promptIds, completionIds, logprobs: scored.slice(promptIds.length) });
  }
  return turns;
}
