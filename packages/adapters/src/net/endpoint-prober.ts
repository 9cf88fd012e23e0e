import { PolicyStateV2 } from "@harness-s/core/protocol";
import type { Clock } from "@harness-s/core";
import type { EndpointProbe, EndpointProber, RegisterPolicyEndpoint } from "@harness-s/core/rescue";
import { EndpointProbeError } from "../errors.ts";
import { ChatCompletionRead } from "../llm/openai-upstream.ts";
import { outboundFetch, type OutboundPolicy } from "./outbound.ts";

/** `<name>@v<n>`, as the policy worker's façade names the version it answered at. */
const versionOf = (model: string | undefined): number | null => {
  const m = model?.match(/@v(\d+)$/);
  return m ? Number(m[1]) : null;
};

/**
 * Probes a caller's endpoint through the outbound guard before it is registered: a protocol-v2
 * endpoint must answer its policy's state (`GET /v2/policies/{policy}`: the version is its weight
 * version); an OpenAI-compatible one a one-token completion with prompt and completion token ids
 * and log-probabilities (an endpoint that returns text only is refused, `ENDPOINT_NO_TOKEN_IDS`:
 * ids re-tokenised from text would not match their log-probabilities).
 *
 * @example
 * const prober = new HttpEndpointProber({ allowLoopback: false }, systemClock);
 */
export class HttpEndpointProber implements EndpointProber {
  private readonly fetch: typeof fetch;

  constructor(
    outbound: OutboundPolicy,
    private readonly clock: Clock,
    limits = { maxBytes: 1 << 20, deadlineMs: 15_000 },
  ) {
    this.fetch = outboundFetch(outbound, limits);
  }

  async probe(endpoint: RegisterPolicyEndpoint): Promise<EndpointProbe> {
    const headers: Record<string, string> = { "content-type": "application/json", ...(endpoint.secretHeader ? { [endpoint.secretHeader.name]: endpoint.secretHeader.value } : {}) };
    const base = endpoint.url.replace(/\/+$/, "");
    const answer = async (path: string, init: RequestInit) => {
      let res: Response;
      try {
        res = await this.fetch(`${base}${path}`, { ...init, headers });
      } catch (err) {
        // A refused URL keeps its own code (URL_NOT_ALLOWED); anything else is the endpoint not answering.
        if ((err as { code?: string }).code === "URL_NOT_ALLOWED") throw err;
        throw new EndpointProbeError(`the endpoint did not answer (${(err as Error).name})`);
      }
      if (!res.ok) throw new EndpointProbeError(`the endpoint answered HTTP ${res.status} to ${init.method ?? "GET"} ${path}`);
      try {
        return await res.json();
      } catch {
        throw new EndpointProbeError(`the endpoint's answer to ${path} is not JSON`);
      }
    };
    if (endpoint.kind === "protocol-v2") {
      const state = PolicyStateV2.safeParse(await answer(`/v2/policies/${encodeURIComponent(endpoint.policy)}`, { method: "GET" }));
      if (!state.success) throw new EndpointProbeError("the endpoint's policy state is not protocol v2's");
      return { weightVersion: state.data.version, checkedAt: this.clock.now() };
    }
    const body = { model: endpoint.policy, messages: [{ role: "user", content: "ping" }], max_tokens: 1, logprobs: true, return_token_ids: true };
    const got = ChatCompletionRead.safeParse(await answer("/chat/completions", { method: "POST", body: JSON.stringify(body) }));
    if (!got.success) throw new EndpointProbeError("the endpoint's answer is not a chat completion");
    const choice = got.data.choices[0]!;
    if (!got.data.prompt_token_ids?.length || !choice.token_ids?.length || !choice.logprobs?.content?.length)
      throw new EndpointProbeError(
        "the endpoint returned no token ids or no log-probabilities (needed: prompt_token_ids, choices[0].token_ids, logprobs; vLLM gives them with return_token_ids)",
        "ENDPOINT_NO_TOKEN_IDS",
      );
    return { weightVersion: versionOf(got.data.model), checkedAt: this.clock.now() };
  }
}
