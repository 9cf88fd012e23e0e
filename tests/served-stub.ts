import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { type TurnDelay, waitTurn } from "../packages/cli/src/commands/scripted-policy.ts";

// A stand-in inference server for tests: vLLM's /tokenize, /detokenize, /v1/completions,
// /inference/v1/generate and /v1/chat/completions, and SGLang's /generate, over a toy model that
// is exact by construction: one id per character (ChatML's markers one id each), and the
// log-probability of an id after a prefix a fixed function of the two, so any returned
// log-probability can be re-scored here (`score`). Its chat template can be made not
// append-only (earlier assistant turns lose their <think> blocks, as Qwen3's does).

const SPECIALS = ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>"];
export const IM_END = 2;

/** The toy tokenizer: each special marker one id (1…), any other character 100 + its code. */
export function tokenize(text: string): number[] {
  const ids: number[] = [];
  for (let i = 0; i < text.length; ) {
    const special = SPECIALS.findIndex((s) => text.startsWith(s, i));
    if (special >= 0) {
      ids.push(special + 1);
      i += SPECIALS[special]!.length;
    } else {
      ids.push(100 + text.charCodeAt(i));
      i++;
    }
  }
  return ids;
}

export const detokenize = (ids: readonly number[]) =>
  ids.map((id) => (id < 100 ? SPECIALS[id - 1]! : String.fromCharCode(id - 100))).join("");

/** The toy model's log-probability of each id after the ids before it (the first: 0). */
export function score(ids: readonly number[]): number[] {
  let h = 7;
  return ids.map((id, i) => {
    const lp = i === 0 ? 0 : -((((h ^ Math.imul(id, 2654435761)) >>> 0) % 1000) + 1) / 400;
    h = (Math.imul(h, 31) + id) >>> 0;
    return lp;
  });
}

/** One sampled completion after `prompt`: the script's text then the end-of-turn id, cut at `maxTokens`. */
export function sampleAfter(prompt: readonly number[], text: string, maxTokens: number) {
  const all = [...tokenize(text), IM_END];
  const ids = all.slice(0, maxTokens);
  const lps = score([...prompt, ...ids]).slice(prompt.length);
  return {
    ids,
    lps,
    text: detokenize(ids.filter((id) => id !== IM_END)),
    finish: ids.length < all.length ? ("length" as const) : ("stop" as const),
  };
}

export interface Message {
  role: string;
  content?: string | null;
  tool_calls?: { function: { name: string; arguments: string } }[];
}

/** ChatML; with `rewrites`, every assistant turn before the last user message loses its <think> block. */
export function render(messages: Message[], generationPrompt: boolean, rewrites: boolean): string {
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const body = messages.map((m, i) => {
    let content = m.content ?? "";
    if (rewrites && m.role === "assistant" && i < lastUser) content = content.replace(/<think>[\s\S]*?<\/think>/g, "");
    const calls = (m.tool_calls ?? [])
      .map(
        (c) =>
          `<tool_call>{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}</tool_call>`,
      )
      .join("");
    return `<|im_start|>${m.role}\n${content}${calls}<|im_end|>\n`;
  });
  return body.join("") + (generationPrompt ? "<|im_start|>assistant\n" : "");
}

export interface StubOptions {
  /** The model names served; any other is answered 404 (as vLLM answers an unknown model). */
  models: string[];
  /** The completion's text of the nth sample (an end-of-turn id follows unless cut at max_tokens). */
  script: (nth: number) => string;
  /** The model name the nth reply names (default: the one asked for). */
  answerAs?: (asked: string, nth: number) => string;
  /** The chat template drops earlier <think> blocks (not append-only). */
  rewrites?: boolean;
  /** Routes this server does not offer (404). */
  missing?: string[];
  /** Chat completions answer text only (no ids), as a server without return_token_ids does. */
  chatTextOnly?: boolean;
  /** The nth request to a sampling route answers this status once instead (a fault). */
  fault?: (nth: number) => number | undefined;
  /**
   * How long a sampling request waits before it is answered, by its episode (the body of the episode's first request),
   * its turn in that episode and its body.
   */
  delayMs?: TurnDelay;
}

const SAMPLE_ROUTES = ["/v1/completions", "/inference/v1/generate", "/generate", "/v1/chat/completions"];

/** Starts the stub on loopback; `requests` records every request, `samples` counts sampled turns. */
export async function startServedStub(opts: StubOptions) {
  const requests: { path: string; body: Record<string, unknown> }[] = [];
  let samples = 0;
  let sampleRequests = 0;
  // What a rescue should meter: each sample's prompt ids beyond the longest sequence answered before
  // that it extends (its episode's ids so far), and its completion ids.
  const answered: { ids: number[]; episode: string; turn: number }[] = [];
  let metered = 0;
  /** The longest sequence answered before that `prompt` extends: its episode's ids so far. */
  const episodeOf = (prompt: readonly number[]) =>
    answered
      .filter((a) => a.ids.length <= prompt.length && a.ids.every((id, i) => prompt[i] === id))
      .sort((x, y) => y.ids.length - x.ids.length)[0];
  const sample = (prompt: number[], maxTokens: number, body: string) => {
    const s = sampleAfter(prompt, opts.script(samples++), maxTokens);
    const known = episodeOf(prompt);
    metered += prompt.length - (known?.ids.length ?? 0) + s.ids.length;
    answered.push({ ids: [...prompt, ...s.ids], episode: known?.episode ?? body, turn: (known?.turn ?? -1) + 1 });
    return s;
  };
  /**
   * A sampling request's episode for its delay, told apart from identical ones by arrival: episodes whose requests are
   * the same (one task, one script: chat requests carry no episode id) are the 1st, 2nd, … to ask at this point, and an
   * episode answered sooner asks sooner next time, so each keeps its own pace rather than all running in lockstep.
   */
  const seenPrompts = new Map<string, number>();
  const delayOf = (path: string, body: Record<string, unknown>) => {
    const prompt = promptOf(path, body);
    const asked = JSON.stringify(prompt);
    const rank = seenPrompts.get(asked) ?? 0;
    seenPrompts.set(asked, rank + 1);
    const known = episodeOf(prompt);
    return opts.delayMs!(`${known?.episode ?? JSON.stringify(body)}#${rank}`, (known?.turn ?? -1) + 1, body);
  };
  /** The prompt ids a sampling request samples after. */
  const promptOf = (path: string, body: Record<string, unknown>): number[] => {
    if (path === "/v1/completions") return body.prompt as number[];
    if (path === "/inference/v1/generate") return body.token_ids as number[];
    if (path === "/generate") return body.input_ids as number[];
    return tokenize(render(body.messages as Message[], true, opts.rewrites ?? false));
  };
  const answer = (path: string, body: Record<string, unknown>, nth: number): [number, unknown] => {
    const asked = String(body.model ?? body.lora_path ?? opts.models[0]);
    if (!opts.models.includes(asked))
      return [404, { error: { message: `The model \`${asked}\` does not exist.`, type: "NotFoundError", code: 404 } }];
    const model = opts.answerAs?.(asked, nth) ?? asked;
    if (path === "/tokenize") {
      const tokens = tokenize(
        render(body.messages as Message[], body.add_generation_prompt !== false, opts.rewrites ?? false),
      );
      return [200, { tokens, count: tokens.length, max_model_len: 4096 }];
    }
    if (path === "/detokenize")
      return [200, { prompt: detokenize((body.tokens as number[]).filter((id) => id !== IM_END)) }];
    if (path === "/v1/completions") {
      const prompt = body.prompt as number[];
      const s = sample(prompt, Number(body.max_tokens), JSON.stringify(body));
      const logprobs = { token_logprobs: s.lps, tokens: s.ids.map(String), text_offset: [], top_logprobs: [] };
      return [
        200,
        {
          id: "cmpl-1",
          object: "text_completion",
          model,
          choices: [
            { index: 0, text: s.text, token_ids: s.ids, prompt_token_ids: prompt, logprobs, finish_reason: s.finish },
          ],
        },
      ];
    }
    if (path === "/inference/v1/generate") {
      const params = body.sampling_params as { max_tokens: number };
      const s = sample(body.token_ids as number[], params.max_tokens, JSON.stringify(body));
      return [
        200,
        {
          request_id: "r",
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
    }
    if (path === "/generate") {
      const params = body.sampling_params as { max_new_tokens: number };
      const s = sample(body.input_ids as number[], params.max_new_tokens, JSON.stringify(body));
      return [
        200,
        {
          text: s.text,
          output_ids: s.ids,
          meta_info: {
            id: "g",
            finish_reason: { type: s.finish },
            output_token_logprobs: s.lps.map((lp, i) => [lp, s.ids[i], null]),
          },
        },
      ];
    }
    const prompt = tokenize(render(body.messages as Message[], true, opts.rewrites ?? false));
    const s = sample(prompt, Number(body.max_tokens), JSON.stringify(body));
    const choice = { index: 0, message: { role: "assistant", content: s.text }, finish_reason: s.finish };
    if (opts.chatTextOnly) return [200, { model, choices: [choice] }];
    return [
      200,
      {
        model,
        prompt_token_ids: prompt,
        choices: [
          { ...choice, token_ids: s.ids, logprobs: { content: s.lps.map((logprob) => ({ token: "x", logprob })) } },
        ],
      },
    ];
  };
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>) : {};
    requests.push({ path, body });
    const known = ["/tokenize", "/detokenize", ...SAMPLE_ROUTES].includes(path) && !opts.missing?.includes(path);
    const nth = SAMPLE_ROUTES.includes(path) ? sampleRequests++ : -1;
    const fault = nth >= 0 ? opts.fault?.(nth) : undefined;
    if (nth >= 0 && opts.delayMs) await waitTurn(delayOf(path, body));
    const [status, out] = !known
      ? [404, { detail: "Not Found" }]
      : fault
        ? [fault, { error: { message: "scripted fault" } }]
        : answer(path, body, nth);
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(out));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    samples: () => samples,
    /** The tokens a rescue sampling here should have metered so far (see `answered`). */
    metered: () => metered,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
