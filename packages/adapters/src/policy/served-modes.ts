import {
  extendsIds,
  ChatTokenReply,
  CompletionIdsReply,
  DetokenizeReply,
  GenerateTokensReply,
  SglangGenerateReply,
  TokenizeReply,
} from "@harness-s/core/protocol";
import type { ChatMessage, ToolSchema } from "@harness-s/core/protocol";
import type { TokenMode } from "@harness-s/core/callers";
import { PolicyEndpointError, PolicyReplyInvalidError, ServedModelMismatchError } from "../errors.ts";
import type { ServedClient } from "./served-client.ts";
import { hermesToolCalls, type SampledCall } from "./tool-choice.ts";

/**
 * Where a rescue samples a served endpoint: its client, the model name every request names (and every reply must), and
 * its kind's chat path.
 */
export interface ServedTarget {
  client: ServedClient;
  /** The served model: a rescue's `servedModel`, or the registration's `policy` when probing. */
  model: string;
  /** The registration's model name (SGLang: a served model other than it is a LoRA adapter, named by `lora_path`). */
  baseModel: string;
  chatPath: string;
  /**
   * The model name a reply must name (default: {@link model}, the one asked for): vLLM answers a base model by its
   * first served name, an adapter by its own.
   */
  answersAs?: string;
  /** The kind's own request fields for chat completions' ids (vLLM `return_token_ids`; SGLang's three flags). */
  chatExtras?: Readonly<Record<string, unknown>>;
}

/** SGLang's request field for a served model other than the registration's: its LoRA adapter, by `lora_path`. */
export const adapterField = (model: string, baseModel: string): { lora_path?: string } =>
  model === baseModel ? {} : { lora_path: model };

/**
 * A weight version a server states as text (SGLang's `--weight-version`), as a number where it is a whole one; any
 * other text (SGLang's default `"default"`) pins nothing.
 */
export const wholeVersion = (stated: string | null | undefined): number | undefined =>
  stated && /^\d{1,15}$/.test(stated) ? Number(stated) : undefined;

/** The model a reply to `target` must name. */
export const answeredModel = (target: ServedTarget) => target.answersAs ?? target.model;

/** How a turn samples: temperature 1, top_p 1 for training rollouts (their log-probabilities are then exact). */
export interface ServedSampling {
  temperature: number;
  top_p: number;
  max_tokens: number;
  seed?: number;
}

/**
 * One sampled turn: the whole prompt the server sampled from, the completion and its log-probabilities, how it reads,
 * and the model the reply names (undefined where its wire names none).
 */
export interface ServedTurn extends SampledCall {
  promptIds: number[];
  completionIds: number[];
  logprobs: number[];
  model: string | undefined;
  /** The id of the turn's first tool call, where the server gave one (a tool message answering it names it). */
  callId?: string;
  /** The weight version the reply states (SGLang's `meta_info.weight_version`), where it states one. */
  weightVersion?: string;
}

/**
 * An episode at a served endpoint: each turn adds its new messages (the first turn: the whole conversation) and
 * samples.
 */
export interface ServedEpisode {
  turn(messages: ChatMessage[], sampling: ServedSampling): Promise<ServedTurn>;
}

/** A reply that carries no ids or no log-probabilities: the turn cannot be trained token-exactly. */
export class MissingIdsError extends PolicyReplyInvalidError {}

/** One log-probability per completion id, or the reply is refused. */
function sameLength(path: string, ids: readonly number[], logprobs: readonly number[]): void {
  if (ids.length !== logprobs.length)
    throw new PolicyReplyInvalidError(
      `POST ${path}: ${ids.length} completion ids but ${logprobs.length} log-probabilities`,
    );
}

/**
 * Messages in: the whole conversation each turn to chat completions with the kind's id flags and
 * `logprobs`: the prompt's ids at the top of the reply (vLLM's `prompt_token_ids`) or in the choice
 * (SGLang's), the completion's in the choice (`token_ids`); the assistant's reply goes back as the
 * server answered it. Tool calls as the server parsed them, else read from its text.
 */
class ChatEpisode implements ServedEpisode {
  private readonly messages: ChatMessage[] = [];

  constructor(
    private readonly target: ServedTarget,
    private readonly tools: ToolSchema[],
  ) {}

  async turn(add: ChatMessage[], sampling: ServedSampling): Promise<ServedTurn> {
    this.messages.push(...add);
    const { client, model, chatPath, chatExtras = { return_token_ids: true } } = this.target;
    const body = {
      model,
      messages: this.messages,
      ...(this.tools.length ? { tools: this.tools } : {}),
      ...sampling,
      logprobs: true,
      ...chatExtras,
    };
    const reply = await client.post(chatPath, body, ChatTokenReply, model);
    const choice = reply.choices[0]!;
    const logprobs = choice.logprobs?.content?.map((t) => t.logprob);
    const promptIds = reply.prompt_token_ids ?? choice.prompt_token_ids;
    if (!promptIds?.length || !choice.token_ids || !logprobs)
      throw new MissingIdsError(
        `POST ${chatPath}: the reply carries no prompt_token_ids (at its top, as vLLM answers, or in its choice, as SGLang does), choices[0].token_ids or logprobs: vLLM gives them with return_token_ids and logprobs, SGLang since its chat replies carry ids per choice (return_token_ids, mid-2026); an older SGLang answers text only`,
      );
    sameLength(chatPath, choice.token_ids, logprobs);
    const weightVersion = choice.meta_info?.weight_version ?? undefined;
    const { content = null, tool_calls } = choice.message;
    this.messages.push({ role: "assistant", content, ...(tool_calls?.length ? { tool_calls } : {}) });
    const text = content ?? "";
    const parsed = tool_calls?.length
      ? {
          content: text,
          toolCalls: tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments })),
        }
      : hermesToolCalls(text);
    const callId = tool_calls?.[0]?.id;
    return {
      promptIds,
      completionIds: choice.token_ids,
      logprobs,
      model: reply.model,
      text,
      ...parsed,
      ...(callId ? { callId } : {}),
      ...(weightVersion ? { weightVersion } : {}),
    };
  }
}

/** What an id-prompt sampler answers for one turn (the prompt it reports sampling from, where it reports one). */
interface IdsSample {
  promptIds?: number[];
  completionIds: number[];
  logprobs: number[];
  text: string;
  model: string | undefined;
  weightVersion?: string;
}

/** Samples one completion after these ids. */
type IdsSampler = (target: ServedTarget, ids: number[], sampling: ServedSampling) => Promise<IdsSample>;

/** vLLM's `/v1/completions` with the prompt as ids (`add_special_tokens: false`: the ids are the whole prompt). */
const completionsIds: IdsSampler = async ({ client, model }, ids, sampling) => {
  const body = {
    model,
    prompt: ids,
    ...sampling,
    logprobs: 1,
    return_token_ids: true,
    skip_special_tokens: false,
    add_special_tokens: false,
  };
  const reply = await client.post("/v1/completions", body, CompletionIdsReply, model);
  const c = reply.choices[0]!;
  const logprobs = c.logprobs?.token_logprobs;
  if (!c.token_ids || !logprobs)
    throw new MissingIdsError(
      "POST /v1/completions: the reply carries no choices[0].token_ids or logprobs (vLLM gives them with return_token_ids and logprobs)",
    );
  sameLength("/v1/completions", c.token_ids, logprobs);
  return {
    ...(c.prompt_token_ids ? { promptIds: c.prompt_token_ids } : {}),
    completionIds: c.token_ids,
    logprobs,
    text: c.text,
    model: reply.model,
  };
};

/**
 * vLLM's `/inference/v1/generate` (tokens in, tokens out; its reply has no text, so `/detokenize` reads it); the model
 * its reply names, where it names one, is checked as any other reply's.
 */
const inferenceGenerate: IdsSampler = async ({ client, model }, ids, { max_tokens, ...rest }) => {
  const body = {
    model,
    token_ids: ids,
    sampling_params: { ...rest, max_tokens, logprobs: 1, skip_special_tokens: false },
  };
  const reply = await client.post("/inference/v1/generate", body, GenerateTokensReply, model);
  const c = reply.choices[0]!;
  const logprobs = c.logprobs?.content.map((t) => t.logprob);
  if (!c.token_ids || !logprobs)
    throw new MissingIdsError("POST /inference/v1/generate: the reply carries no choices[0].token_ids or logprobs");
  sameLength("/inference/v1/generate", c.token_ids, logprobs);
  const text = c.token_ids.length
    ? (await client.post("/detokenize", { model, tokens: c.token_ids }, DetokenizeReply, model)).prompt
    : "";
  return { completionIds: c.token_ids, logprobs, text, model: reply.model };
};

/**
 * SGLang's `/generate` with `input_ids` (a served model other than the registration's is its LoRA
 * adapter, `lora_path`). SGLang answers an adapter it has not loaded with a 400 naming it
 * (sglang@5bf90e9dd2a3968df22212dc5f39ab46c55c4791 python/sglang/srt/lora/lora_registry.py: "The
 * following requested LoRA adapters are not loaded"): that model is not served. The turn's seed is
 * `sampling_params.sampling_seed` (io_struct.py's `SamplingParamsIPC` at sglang@001067ff).
 */
const sglangGenerate: IdsSampler = async (
  { client, model, baseModel },
  ids,
  { max_tokens, temperature, top_p, seed },
) => {
  const body = {
    input_ids: ids,
    sampling_params: {
      max_new_tokens: max_tokens,
      temperature,
      top_p,
      skip_special_tokens: false,
      ...(seed === undefined ? {} : { sampling_seed: seed }),
    },
    return_logprob: true,
    ...adapterField(model, baseModel),
  };
  const reply = await client.post("/generate", body, SglangGenerateReply, model).catch((err: unknown) => {
    if (err instanceof PolicyEndpointError && err.status === 400 && /LoRA adapters are not loaded/.test(err.message))
      throw new ServedModelMismatchError(
        `POST /generate: the endpoint has no adapter ${JSON.stringify(model)} loaded (HTTP 400); it no longer holds that version, or the name is not the one it serves`,
      );
    throw err;
  });
  const pairs = reply.meta_info.output_token_logprobs;
  if (pairs.length !== reply.output_ids.length || pairs.some(([, id], i) => id !== reply.output_ids[i]))
    throw new PolicyReplyInvalidError(
      "POST /generate: meta_info.output_token_logprobs does not name output_ids one by one",
    );
  const weightVersion = reply.meta_info.weight_version ?? undefined;
  return {
    completionIds: reply.output_ids,
    logprobs: pairs.map(([lp]) => lp),
    text: reply.text,
    model: undefined,
    ...(weightVersion ? { weightVersion } : {}),
  };
};

/** The ids the server's own chat template renders for these messages (`/tokenize`). */
async function render(
  { client, model }: ServedTarget,
  messages: ChatMessage[],
  tools: ToolSchema[] | undefined,
  generationPrompt: boolean,
): Promise<number[]> {
  const body = {
    model,
    messages,
    add_generation_prompt: generationPrompt,
    add_special_tokens: false,
    ...(tools?.length ? { tools } : {}),
  };
  return (await client.post("/tokenize", body, TokenizeReply, model)).tokens;
}

/** Texts no real turn contains: the fixed conversation the delta rule renders new messages after. */
const PROBE_SYSTEM = "\u2063SYSTEM\u2063";
const PROBE_USER = "\u2063USER\u2063";

/** The longest run of ids both end with. */
function commonSuffix(a: readonly number[], b: readonly number[]): number[] {
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  return a.slice(a.length - n);
}

/**
 * Tokens in: the server's `/tokenize` renders the first turn and each later turn's new messages
 * (the delta rule of the policy worker's chat.py: the render of a fixed conversation ending in the
 * previous assistant turn plus the new messages, minus the render of that conversation alone),
 * after the template's end-of-turn ids the sampler did not emit (mask 0); the episode's ids go
 * back exactly as they were, so every turn extends the one before by construction.
 */
class TokensEpisode implements ServedEpisode {
  private ids: number[] = [];
  private previous?: ChatMessage;
  private lastCompletion: number[] = [];
  private tail?: Promise<number[]>;

  constructor(
    private readonly target: ServedTarget,
    private readonly tools: ToolSchema[],
    private readonly sample: IdsSampler,
  ) {}

  async turn(add: ChatMessage[], sampling: ServedSampling): Promise<ServedTurn> {
    const prompt = this.previous
      ? [...this.ids, ...(await this.forced()), ...(await this.delta(this.previous, add))]
      : await render(this.target, add, this.tools, true);
    const out = await this.sample(this.target, prompt, sampling);
    const parsed = hermesToolCalls(out.text);
    const promptIds = out.promptIds ?? prompt;
    this.ids = [...promptIds, ...out.completionIds];
    this.lastCompletion = out.completionIds;
    const calls = parsed.toolCalls?.map((c, i) => ({
      id: `call${i}`,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    }));
    this.previous = { role: "assistant", content: parsed.content, ...(calls ? { tool_calls: calls } : {}) };
    return {
      promptIds,
      completionIds: out.completionIds,
      logprobs: out.logprobs,
      model: out.model,
      text: out.text,
      ...parsed,
      ...(out.weightVersion ? { weightVersion: out.weightVersion } : {}),
    };
  }

  /**
   * The template's end-of-turn ids after the last completion that its sampler did not emit: the rest after a stop id,
   * all of it after a cut turn.
   */
  private async forced(): Promise<number[]> {
    this.tail ??= Promise.all(
      ["x", "y"].map((c) =>
        render(
          this.target,
          [
            { role: "user", content: PROBE_USER },
            { role: "assistant", content: c },
          ],
          undefined,
          false,
        ),
      ),
    ).then(([x, y]) => commonSuffix(x!, y!));
    const tail = await this.tail;
    return tail.length && this.lastCompletion.at(-1) === tail[0] ? tail.slice(1) : tail;
  }

  private async delta(previous: ChatMessage, add: ChatMessage[]): Promise<number[]> {
    for (const head of [[{ role: "system" as const, content: PROBE_SYSTEM }], []]) {
      const base = [...head, { role: "user" as const, content: PROBE_USER }, previous];
      const [before, after] = await Promise.all([
        render(this.target, base, undefined, false),
        render(this.target, [...base, ...add], undefined, true),
      ]);
      if (after.length > before.length && extendsIds(after, before)) return after.slice(before.length);
    }
    // A template that rewrites earlier turns whatever the base: the new messages rendered alone.
    return render(this.target, add, undefined, true);
  }
}

const tokensIn =
  (sample: IdsSampler) =>
  (target: ServedTarget, tools: ToolSchema[]): ServedEpisode =>
    new TokensEpisode(target, tools, sample);

/**
 * The token modes, by name: how an episode at the endpoint samples its turns. A registration's
 * probe samples one turn in a mode to find whether the server offers it.
 */
export const TOKEN_MODES: Readonly<Record<TokenMode, (target: ServedTarget, tools: ToolSchema[]) => ServedEpisode>> = {
  "completions-ids": tokensIn(completionsIds),
  "inference-generate": tokensIn(inferenceGenerate),
  "sglang-generate": tokensIn(sglangGenerate),
  "chat-token-ids": (target, tools) => new ChatEpisode(target, tools),
};
