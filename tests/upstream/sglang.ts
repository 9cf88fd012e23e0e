import { detokenize, IM_END, render, sampleAfter, score, tokenize, type Message } from "../served-stub.ts";
import { NOT_FOUND, serve, type Json, type Route } from "./http.ts";

// A stand-in SGLang server, written from SGLang's source, not from our worker's façade. Each behaviour cites what it
// restates (sgl-project/sglang):
// - P = python/sglang/srt/entrypoints/openai/protocol.py @004c82e07d876f6e4a0ad6e15325706b0f478f1a
//   `ChatCompletionRequest` (`return_prompt_token_ids`, `return_token_ids`, `return_meta_info`, `lora_path`),
//   `ChatCompletionResponseChoice` (`prompt_token_ids`, `token_ids`, `meta_info` **per choice**, each dropped when
//   None), `ChatCompletionResponse` (no top-level ids).
// - C = python/sglang/srt/entrypoints/openai/serving_chat.py (same era): each choice's `prompt_token_ids` only with
//   `return_prompt_token_ids`, its `meta_info` only with `return_meta_info`; the reply's `model` is the request's.
// - O = the same protocol.py @9b116dffe828b2dfa7ec0e4d061555b6c354b67a: an older release, whose chat replies carry no
//   ids at all (`older: true`).
// - T = python/sglang/srt/entrypoints/openai/serving_tokenize.py @0351c1fafe4c53c91c331dea205af48b018af559: `/tokenize`
//   takes a text `prompt`; messages are refused (400). (Newer releases accept `messages` but always render the
//   generation prompt: P's `TokenizeRequest.to_chat_completion_request` drops `add_generation_prompt`.)
// - G = python/sglang/srt/managers/io_struct.py and tokenizer_manager.py @001067fffe33427bee0ed2f007fb7551a1d76b44:
//   `/generate` `{text, output_ids, meta_info}`, `meta_info.weight_version` the server's `--weight-version` string,
//   `output_token_logprobs` `[logprob, id, null]`.
//   With `return_logprob` and `logprob_start_len: 0`, `meta_info.input_token_logprobs` `[logprob or null, id, null]`
//   from the first input id (null: nothing before it); SGLang's default -1 gives none.
// - D = P's `DetokenizeRequest {model, tokens, skip_special_tokens}` → `DetokenizeResponse {text}`.
// - M = tokenizer_manager.py `get_model_info` (read at 004c82e0): `/get_model_info` reports `weight_version`.
// - L = python/sglang/srt/lora/lora_registry.py @5bf90e9dd2a3968df22212dc5f39ab46c55c4791: an adapter not loaded is
//   a 400 "The following requested LoRA adapters are not loaded: …".
// Where SGLang answers what is inconvenient for us, so does this: no vLLM-style top-level `prompt_token_ids`, no
// `/tokenize` of messages, no `/v1/models` check of the model name (SGLang samples whatever `model` says).

export interface SglangOptions {
  /** The completion's text of the nth sample. */
  script: (nth: number) => string;
  /** LoRA adapters loaded (by `lora_path`). */
  adapters?: string[];
  /** The server's `--weight-version` (SGLang's default: "default"). */
  weightVersion?: string;
  /** An SGLang from before per-choice ids (O): chat replies carry text only. */
  older?: boolean;
}

export async function startSglangStandIn(opts: SglangOptions) {
  let nth = 0;
  const weightVersion = () => opts.weightVersion ?? "default";
  const notLoaded = (lora: unknown): [number, unknown] | undefined =>
    lora === undefined || lora === null || opts.adapters?.includes(String(lora))
      ? undefined
      : [
          400,
          {
            error: {
              message: `The following requested LoRA adapters are not loaded: ${String(lora)}\nLoaded adapters: ${(opts.adapters ?? []).join(", ")}.`,
            },
          },
        ]; // L
  const chat: Route = (body) => {
    const refused = notLoaded(body.lora_path);
    if (refused) return refused;
    const prompt = tokenize(render(body.messages as Message[], true, false));
    const s = sampleAfter(prompt, opts.script(nth++), Number(body.max_completion_tokens ?? body.max_tokens ?? 128));
    const choice: Json = {
      index: 0,
      message: { role: "assistant", content: s.text, reasoning_content: null, tool_calls: null },
      logprobs: body.logprobs
        ? { content: s.lps.map((logprob) => ({ token: "x", bytes: [120], logprob, top_logprobs: [] })) }
        : null,
      finish_reason: s.finish,
      matched_stop: s.finish === "stop" ? 2 : null,
    };
    if (!opts.older) {
      if (body.return_prompt_token_ids) choice.prompt_token_ids = prompt; // C
      if (body.return_token_ids) choice.token_ids = s.ids; // P
      if (body.return_meta_info)
        choice.meta_info = {
          id: `r${nth}`,
          finish_reason: { type: s.finish },
          prompt_tokens: prompt.length,
          weight_version: weightVersion(),
          completion_tokens: s.ids.length,
        }; // C, G
    }
    return [
      200,
      {
        id: `chat-${nth}`,
        object: "chat.completion",
        created: 0,
        model: body.model ?? "default", // C: the request's; P: DEFAULT_MODEL_NAME
        choices: [choice],
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: s.ids.length,
          total_tokens: prompt.length + s.ids.length,
        },
        metadata: null,
      },
    ];
  };
  const tokenizeRoute: Route = (body) => {
    if (typeof body.prompt !== "string")
      return [400, { object: "error", message: "prompt: Field required", type: "Bad Request", param: null, code: 400 }]; // T
    const tokens = tokenize(body.prompt);
    return [200, { tokens, count: tokens.length, max_model_len: 4096 }];
  };
  const generate: Route = (body) => {
    const refused = notLoaded(body.lora_path);
    if (refused) return refused;
    const params = (body.sampling_params ?? {}) as { max_new_tokens?: number };
    const s = sampleAfter(body.input_ids as number[], opts.script(nth++), params.max_new_tokens ?? 128);
    return [
      200,
      {
        text: s.text,
        output_ids: s.ids,
        meta_info: {
          id: `g${nth}`,
          finish_reason: s.finish === "stop" ? { type: "stop", matched: 2 } : { type: "length", length: s.ids.length },
          prompt_tokens: (body.input_ids as number[]).length,
          weight_version: weightVersion(),
          ...(body.return_logprob
            ? {
                output_token_logprobs: s.lps.map((lp, i) => [lp, s.ids[i], null]),
                input_token_logprobs:
                  body.logprob_start_len === 0
                    ? score(body.input_ids as number[]).map((lp, i) => [
                        i === 0 ? null : lp,
                        (body.input_ids as number[])[i],
                        null,
                      ])
                    : [],
              }
            : {}),
        },
      },
    ]; // G
  };
  const server = await serve({
    "POST /v1/chat/completions": chat,
    "POST /tokenize": tokenizeRoute,
    "POST /v1/tokenize": tokenizeRoute,
    "POST /generate": generate,
    "POST /v1/detokenize": (body) => [
      200,
      {
        text: detokenize((body.tokens as number[]).filter((id) => id !== IM_END || body.skip_special_tokens === false)),
      },
    ], // D (SGLang serves it at /detokenize and /v1/detokenize: http_server.py @0025436eab0556737d615b36a4dd3e1e26e82f3d)
    "GET /get_model_info": () => [
      200,
      { model_path: "toy", tokenizer_path: "toy", is_generation: true, weight_version: weightVersion() },
    ], // M
    "POST /inference/v1/generate": () => NOT_FOUND,
  });
  return { ...server, setWeightVersion: (v: string) => (opts.weightVersion = v) };
}
