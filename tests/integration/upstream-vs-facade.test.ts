import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "@harness-s/core";
import { TokenPolicyClient } from "@harness-s/adapters/policy";
import { sharedPolicyWorker } from "../run-policy-worker.ts";
import { startSglangStandIn } from "../upstream/sglang.ts";
import { startVllmStandIn } from "../upstream/vllm.ts";

// Issue 69 item 4: where the upstream stand-ins (tests/upstream/, written from vLLM's and SGLang's source) and our
// worker's façade (docs/policy-worker.md) answer differently, and why; each row asserts both answers, so a façade
// that starts answering as upstream (or a stand-in that drifts) fails its row and the table is rewritten.
let worker: { url: string; token: string };
let sglang: Awaited<ReturnType<typeof startSglangStandIn>>;
let vllm: Awaited<ReturnType<typeof startVllmStandIn>>;
const POLICY = "upstream-table";
beforeAll(async () => {
  worker = await sharedPolicyWorker();
  await new TokenPolicyClient(worker.url, { token: worker.token, clock: systemClock }).create(POLICY, {
    base_model: "tiny",
    lora: { rank: 2, alpha: 4, targets: ["q_proj", "v_proj"] },
  });
  sglang = await startSglangStandIn({ script: () => "hi", weightVersion: "3" });
  vllm = await startVllmStandIn({ servedNames: ["a", "b"], script: () => "hi" });
}, 300_000);
afterAll(async () => {
  await sglang?.close();
  await vllm?.close();
});

const post = (base: string, path: string, body: unknown, token?: string) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, json: (await r.json()) as Reply }));
/** The fields of the replies this table reads. */
interface Reply {
  model?: string;
  tokens: number[];
  prompt_token_ids?: number[];
  choices: { prompt_token_ids: number[]; meta_info: { weight_version: string } }[];
}
const messages = [{ role: "user", content: "ping" }];
const chat = (model: string) => ({
  model,
  messages,
  max_tokens: 2,
  logprobs: true,
  return_token_ids: true,
  return_prompt_token_ids: true,
  return_meta_info: true,
});

const TABLE = [
  {
    what: "chat completions' prompt ids",
    upstream: "SGLang: in each choice only, none at the top of the reply",
    facade: "both: vLLM's top-level prompt_token_ids and SGLang's per-choice ones",
    why: "one /v1/chat/completions route serves vLLM and SGLang callers; a rescue reads either place",
    check: async () => {
      const up = (await post(sglang.url, "/v1/chat/completions", chat("base"))).json;
      expect(up.prompt_token_ids).toBeUndefined();
      expect(up.choices[0]!.prompt_token_ids.length).toBeGreaterThan(0);
      const ours = (await post(worker.url, "/v1/chat/completions", chat(POLICY), worker.token)).json;
      expect(ours.prompt_token_ids?.length).toBeGreaterThan(0);
      expect(ours.choices[0]!.prompt_token_ids).toEqual(ours.prompt_token_ids);
    },
  },
  {
    what: "/tokenize with messages",
    upstream: "older SGLang: refused (a text prompt only)",
    facade: "rendered with the chat template, as vLLM's /tokenize does",
    why: "the path is vLLM's and SGLang's at once; the worker answers vLLM's, so sglang-generate works against it",
    check: async () => {
      expect((await post(sglang.url, "/tokenize", { messages })).status).toBe(400);
      const ours = await post(worker.url, "/tokenize", { model: POLICY, messages }, worker.token);
      expect(ours.status).toBe(200);
      expect(ours.json.tokens.length).toBeGreaterThan(0);
    },
  },
  {
    what: "the model a base model's reply names",
    upstream: "vLLM: the first served name, whichever was asked (--served-model-name a b, asked b: a)",
    facade: "the name asked (<policy> or <policy>@v<N>, docs/policy-worker.md's names)",
    why: "the worker serves each policy under names of its own; the rule a registration records is vLLM's",
    check: async () => {
      expect((await post(vllm.url, "/v1/chat/completions", chat("b"))).json.model).toBe("a");
      const ours = await post(worker.url, "/v1/chat/completions", chat(`${POLICY}@v0`), worker.token);
      expect(ours.json.model).toBe(`${POLICY}@v0`);
    },
  },
  {
    what: "GET /v1/models",
    upstream: "vLLM: the served names, then each adapter with its parent",
    facade: "not served (FastAPI's 404): a registration at the worker records no served names",
    why: "the worker's names are made per request (<policy>@v<N>); nothing fixed to list",
    check: async () => {
      const up = await fetch(`${vllm.url}/v1/models`).then((r) => r.json());
      expect(up.data.map((c: { id: string }) => c.id)).toEqual(["a", "b"]);
      const ours = await fetch(`${worker.url}/v1/models`, { headers: { authorization: `Bearer ${worker.token}` } });
      expect(ours.status).toBe(404);
    },
  },
  {
    what: "SGLang's weight_version",
    upstream: "the server's --weight-version string, whatever was sampled",
    facade: "the version of the policy sampled, as a string",
    why: "the worker holds each policy's versions itself; a trainer's SGLang names its updates",
    check: async () => {
      const up = (await post(sglang.url, "/v1/chat/completions", chat("base"))).json;
      expect(up.choices[0]!.meta_info.weight_version).toBe("3");
      const ours = (await post(worker.url, "/v1/chat/completions", chat(POLICY), worker.token)).json;
      expect(ours.choices[0]!.meta_info.weight_version).toBe("0");
    },
  },
];

describe("where the upstream stand-ins and the worker's façade differ, and why", () => {
  it.each(TABLE)("$what: upstream $upstream; façade $facade ($why)", async ({ check }) => {
    await check();
  });
});
