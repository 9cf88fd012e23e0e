import { z } from "zod";
import { LogProb, MAX_TURN_IDS, TurnIds } from "./v2.ts";

/**
 * What this service reads from the inference servers rescues sample token-exactly (see
 * `TokenMode`), as their projects' source defines the fields; every id a token id, every
 * log-probability at most 0, no turn longer than {@link MAX_TURN_IDS}. Unknown fields pass.
 *
 * - vLLM (vllm-project/vllm): `/tokenize` and `/detokenize`
 *   (vllm@343bacafc7bf4f973a105e8e7d99fa7de61f7e18 vllm/entrypoints/serve/tokenize/protocol.py),
 *   `/v1/completions` (vllm@002032ee2b18e1f7bd924ec47b62504ba3866063
 *   vllm/entrypoints/openai/completion/protocol.py: `CompletionResponseChoice.token_ids`,
 *   `prompt_token_ids`, `logprobs.token_logprobs`), `/inference/v1/generate`
 *   (vllm@06408932946d17ad6453126aca82ea96c4509605 vllm/entrypoints/serve/disagg/protocol.py:
 *   `GenerateResponse.choices[].token_ids`, `logprobs.content[].logprob`; no model, no text), and
 *   chat completions with `return_token_ids` (top-level `prompt_token_ids`, `choices[].token_ids`).
 * - SGLang (sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44): `/generate` with
 *   `input_ids` (python/sglang/srt/managers/io_struct.py `GenerateReqInput`) answers `output_ids`
 *   and `meta_info.output_token_logprobs` as `[logprob, token_id, text or null]`
 *   (python/sglang/srt/managers/tokenizer_manager.py `detokenize_logprob_tokens`).
 */
const LogProbs = z.array(LogProb).max(MAX_TURN_IDS);

/** `POST /tokenize` (vLLM): the ids the server's chat template renders. */
export const TokenizeReply = z.looseObject({ tokens: TurnIds, count: z.number().int().min(0).optional() });

/** `POST /detokenize` (vLLM): the text of some ids. */
export const DetokenizeReply = z.looseObject({ prompt: z.string() });

/** The assistant message of a chat completion (its tool calls, where the server parsed them). */
const ChatMessageRead = z.looseObject({
  content: z.string().nullable().optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string().optional(),
        type: z.string().optional(),
        function: z.object({ name: z.string(), arguments: z.string() }),
      }),
    )
    .nullable()
    .optional(),
});

/** SGLang's weight version: the server's `--weight-version` string, which a trainer sets at each weight update. */
const WeightVersionText = z.string().max(128);

/**
 * `POST /v1/chat/completions` with `return_token_ids` and `logprobs`. vLLM puts the prompt's ids at the top of the reply
 * (`prompt_token_ids`) and the completion's in each choice; SGLang puts both **in each choice** (`prompt_token_ids`,
 * `token_ids`, with `return_prompt_token_ids` / `return_token_ids`) and, with `return_meta_info`, the choice's
 * `meta_info` (its `weight_version`): sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a
 * python/sglang/srt/entrypoints/openai/protocol.py `ChatCompletionRequest`, `ChatCompletionResponseChoice`. An SGLang
 * older than those fields answers no ids at all (@9b116dffe828b2dfa7ec0e4d061555b6c354b67a, same file).
 */
export const ChatTokenReply = z.looseObject({
  model: z.string().optional(),
  prompt_token_ids: TurnIds.nullable().optional(),
  choices: z
    .array(
      z.looseObject({
        message: ChatMessageRead,
        prompt_token_ids: TurnIds.nullable().optional(),
        token_ids: TurnIds.nullable().optional(),
        meta_info: z.looseObject({ weight_version: WeightVersionText.nullable().optional() }).nullable().optional(),
        logprobs: z
          .looseObject({
            content: z
              .array(z.looseObject({ logprob: LogProb }))
              .max(MAX_TURN_IDS)
              .nullable()
              .optional(),
          })
          .nullable()
          .optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
});
export type ChatTokenReply = z.infer<typeof ChatTokenReply>;

/** `POST /v1/completions` with a prompt of ids, `return_token_ids` and `logprobs` (vLLM). */
export const CompletionIdsReply = z.looseObject({
  model: z.string().optional(),
  choices: z
    .array(
      z.looseObject({
        text: z.string(),
        token_ids: TurnIds.nullable().optional(),
        prompt_token_ids: TurnIds.nullable().optional(),
        logprobs: z.looseObject({ token_logprobs: LogProbs }).nullable().optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
});

/**
 * `POST /inference/v1/generate` (vLLM): tokens in, tokens out; no text. Newer vLLM's `GenerateResponse` declares
 * `model` (the scale-out token-in-token-out protocol, vllm@5dfbdc4d as issue 69 read it; not re-read here): checked
 * where present.
 */
export const GenerateTokensReply = z.looseObject({
  model: z.string().optional(),
  choices: z
    .array(
      z.looseObject({
        token_ids: TurnIds.nullable().optional(),
        logprobs: z
          .looseObject({ content: z.array(z.looseObject({ logprob: LogProb })).max(MAX_TURN_IDS) })
          .nullable()
          .optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
});

/** `POST /generate` with `input_ids` and `return_logprob` (SGLang): the reply names no model. */
export const SglangGenerateReply = z.looseObject({
  text: z.string(),
  output_ids: TurnIds,
  meta_info: z.looseObject({
    weight_version: WeightVersionText.nullable().optional(),
    output_token_logprobs: z.array(z.tuple([LogProb, z.number().int().min(0)]).rest(z.unknown())).max(MAX_TURN_IDS),
    finish_reason: z
      .union([z.looseObject({ type: z.string() }), z.string()])
      .nullable()
      .optional(),
  }),
});

/**
 * `GET /v1/models` (vLLM, SGLang): the served names, a LoRA adapter's card naming its base as `parent`
 * (vllm@00153c8b7948077ebdfc5bfa14e403da41aaea6d vllm/entrypoints/openai/models/serving.py `show_available_models`: the
 * base model's names first, in order, then the adapters).
 */
export const ModelListReply = z.looseObject({
  data: z
    .array(z.looseObject({ id: z.string().min(1).max(256), parent: z.string().max(256).nullable().optional() }))
    .max(1024),
});

/**
 * `GET /get_model_info` (SGLang): the server's `weight_version`, the string a trainer sets at each weight update
 * (sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py `get_model_info`, read at 004c82e0).
 */
export const SglangModelInfoReply = z.looseObject({ weight_version: z.string().max(128).nullable().optional() });

/**
 * `POST /v1/completions` with `prompt_logprobs` (vLLM): per choice, one entry a prompt id, the first `null`, each later
 * a map from ids (as strings) to their `logprob` (vllm@002032ee2b18e1f7bd924ec47b62504ba3866063
 * vllm/entrypoints/openai/completion/protocol.py `CompletionResponseChoice.prompt_logprobs`).
 */
export const PromptLogprobsReply = z.looseObject({
  model: z.string().optional(),
  choices: z
    .array(
      z.looseObject({
        prompt_logprobs: z
          .array(z.record(z.string(), z.looseObject({ logprob: LogProb })).nullable())
          .max(MAX_TURN_IDS)
          .nullable()
          .optional(),
      }),
    )
    .min(1),
});

/**
 * `POST /generate` with `return_logprob` and `logprob_start_len: 0` (SGLang): `meta_info.input_token_logprobs` as
 * `[logprob or null, id, text or null]`, one an input id from the start (sgl-project/sglang@001067ff io_struct.py
 * `GenerateReqInput.logprob_start_len`; tokenizer_manager.py).
 */
export const SglangInputLogprobsReply = z.looseObject({
  meta_info: z.looseObject({
    weight_version: z.string().max(128).nullable().optional(),
    input_token_logprobs: z
      .array(z.tuple([LogProb.nullable(), z.number().int().min(0)]).rest(z.unknown()))
      .max(MAX_TURN_IDS),
  }),
});

/** `POST /detokenize`: vLLM answers `{prompt}`, SGLang `{text}` (sglang@004c82e0 protocol.py `DetokenizeResponse`). */
export const AnyDetokenizeReply = z.union([
  z.looseObject({ prompt: z.string() }).transform((r) => r.prompt),
  z.looseObject({ text: z.string() }).transform((r) => r.text),
]);
