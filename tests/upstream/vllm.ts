import { detokenize, IM_END, render, sampleAfter, score, tokenize, type Message } from "../served-stub.ts";
import { serve, type Json, type Route } from "./http.ts";

// A stand-in vLLM server, written from vLLM's source, not from our worker's façade. Each behaviour cites what it
// restates (vllm-project/vllm):
// - S = vllm/entrypoints/openai/models/serving.py @00153c8b7948077ebdfc5bfa14e403da41aaea6d: `show_available_models`
//   lists the base model's served names in order (`--served-model-name a b`), then each LoRA adapter with `parent`
//   the first name; `model_name()` answers a base model with `base_model_paths[0].name` whichever name was asked, an
//   adapter with its own; `check_model` answers a name it does not serve with 404 `{"error": {"message": "The model
//   `x` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}}`.
// - K = vllm/entrypoints/serve/tokenize/protocol.py @343bacafc7bf4f973a105e8e7d99fa7de61f7e18: `/tokenize` renders
//   `messages` with `add_generation_prompt`; `/detokenize` answers `{prompt}`.
// - C = vllm/entrypoints/openai/completion/protocol.py @002032ee2b18e1f7bd924ec47b62504ba3866063: `/v1/completions`
//   with an id prompt and `return_token_ids`: `choices[].token_ids`, `prompt_token_ids`, `logprobs.token_logprobs`;
//   with `prompt_logprobs: n`, `choices[].prompt_logprobs`: `null` for the first id, then per id a map from ids (JSON
//   keys, so strings) to `{logprob, rank, decoded_token}`, the id itself among them.
// - H = chat completions with `return_token_ids` (vLLM PR 22587): `prompt_token_ids` at the **top** of the reply,
//   `choices[].token_ids` in each choice.
// - D = vllm/entrypoints/serve/disagg/protocol.py @06408932946d17ad6453126aca82ea96c4509605: `/inference/v1/generate`
//   tokens in, `choices[].token_ids`, `logprobs.content[].logprob`, no text; newer releases add `model` (`withModel`).
//   An older vLLM has no such route: FastAPI's 404 "Not Found" (`generate: false`).

export interface VllmOptions {
  /** `--served-model-name`, in order (default: ["base"]). */
  servedNames?: string[];
  /** LoRA adapters loaded. */
  adapters?: string[];
  script: (nth: number) => string;
  /** Whether `/inference/v1/generate` exists (default true), and whether its reply names the model. */
  generate?: boolean;
  withModel?: boolean;
}

export async function startVllmStandIn(opts: VllmOptions) {
  let nth = 0;
  const names = opts.servedNames ?? ["base"];
  const adapters = opts.adapters ?? [];
  /** The name a reply gives, or the 404 for a model not served (S). */
  const served = (asked: unknown): string | [number, unknown] => {
    const name = String(asked ?? names[0]);
    if (adapters.includes(name)) return name;
    if (names.includes(name)) return names[0]!;
    return [
      404,
      {
        error: { message: `The model \`${name}\` does not exist.`, type: "NotFoundError", param: "model", code: 404 },
      },
    ];
  };
  const withServed =
    (route: (body: Json, model: string) => [number, unknown]): Route =>
    (body) => {
      const model = served(body.model);
      return typeof model === "string" ? route(body, model) : model;
    };
  const routes: Record<string, Route> = {
    "GET /v1/models": () => [
      200,
      {
        object: "list",
        data: [
          ...names.map((id) => ({ id, object: "model", root: "toy", parent: null })),
          ...adapters.map((id) => ({ id, object: "model", root: `/loras/${id}`, parent: names[0] })),
        ],
      },
    ], // S
    "POST /tokenize": withServed((body) => {
      const text = body.messages
        ? render(body.messages as Message[], body.add_generation_prompt !== false, false)
        : String(body.prompt ?? "");
      const tokens = tokenize(text);
      return [200, { count: tokens.length, max_model_len: 4096, tokens }];
    }), // K
    "POST /detokenize": withServed((body) => [
      200,
      { prompt: detokenize((body.tokens as number[]).filter((id) => id !== IM_END)) },
    ]), // K
    "POST /v1/completions": withServed((body, model) => {
      const prompt = body.prompt as number[];
      const s = sampleAfter(prompt, opts.script(nth++), Number(body.max_tokens ?? 16));
      const choice: Json = {
        index: 0,
        text: s.text,
        logprobs: { text_offset: [], token_logprobs: s.lps, tokens: s.ids.map(String), top_logprobs: [] },
        finish_reason: s.finish,
        ...(body.return_token_ids ? { token_ids: s.ids, prompt_token_ids: prompt } : {}),
        ...(typeof body.prompt_logprobs === "number"
          ? {
              prompt_logprobs: score(prompt).map((logprob, i) =>
                i === 0 ? null : { [String(prompt[i])]: { logprob, rank: 1, decoded_token: detokenize([prompt[i]!]) } },
              ),
            }
          : {}),
      };
      return [200, { id: "cmpl", object: "text_completion", created: 0, model, choices: [choice] }];
    }), // C
    "POST /v1/chat/completions": withServed((body, model) => {
      const prompt = tokenize(render(body.messages as Message[], true, false));
      const s = sampleAfter(prompt, opts.script(nth++), Number(body.max_tokens ?? body.max_completion_tokens ?? 128));
      const choice: Json = {
        index: 0,
        message: { role: "assistant", content: s.text, tool_calls: [] },
        logprobs: body.logprobs
          ? { content: s.lps.map((logprob) => ({ token: "x", logprob, top_logprobs: [] })) }
          : null,
        finish_reason: s.finish,
        ...(body.return_token_ids ? { token_ids: s.ids } : {}),
      };
      return [
        200,
        {
          id: "chat",
          object: "chat.completion",
          created: 0,
          model,
          choices: [choice],
          ...(body.return_token_ids ? { prompt_token_ids: prompt } : {}),
        },
      ];
    }), // H
  };
  if (opts.generate !== false)
    routes["POST /inference/v1/generate"] = withServed((body, model) => {
      const params = body.sampling_params as { max_tokens?: number };
      const s = sampleAfter(body.token_ids as number[], opts.script(nth++), params.max_tokens ?? 16);
      return [
        200,
        {
          request_id: "gen",
          ...(opts.withModel ? { model } : {}),
          choices: [
            {
              index: 0,
              token_ids: s.ids,
              logprobs: { content: s.lps.map((logprob) => ({ token: "x", logprob })) },
              finish_reason: s.finish,
            },
          ],
        },
      ];
    }); // D
  return serve(routes);
}
