import type { Clock } from "@harness-s/core";
import { PolicyStateV2 } from "@harness-s/core/protocol";
import { KIND_MODES, type EndpointProbe, type EndpointProber, type RegisterPolicyEndpoint, type TokenMode } from "@harness-s/core/callers";
import { EndpointNotTokenExactError, EndpointProbeError, PolicyEndpointError, PolicyReplyInvalidError, ServedModelMismatchError } from "../errors.ts";
import { ServedClient } from "../policy/served-client.ts";
import { CHAT_PATHS, MissingIdsError, TOKEN_MODES } from "../policy/served-modes.ts";
import { outboundFetch, type OutboundPolicy } from "./outbound.ts";

/** `<name>@v<n>`, as the policy worker's façade names the version it answered at. */
const versionOf = (model: string | undefined): number | null => {
  const m = model?.match(/@v(\d+)$/);
  return m ? Number(m[1]) : null;
};

/** Why a mode's probe failed, in the prober's words (an endpoint's own error text is not relayed). */
function reason(err: unknown, model: string): EndpointProbeError {
  if (err instanceof EndpointProbeError) return err;
  if (err instanceof MissingIdsError) return new EndpointProbeError(err.message, "ENDPOINT_NO_TOKEN_IDS");
  const request = (err as Error).message.split(":")[0];
  if (err instanceof PolicyEndpointError)
    return new EndpointProbeError(err.status === undefined ? `the endpoint did not answer (${request})` : `the endpoint answered HTTP ${err.status} to ${request}`);
  if (err instanceof ServedModelMismatchError) return new EndpointProbeError(`the endpoint answered HTTP 404 to ${request}: it serves no model ${JSON.stringify(model)}`);
  if (err instanceof PolicyReplyInvalidError)
    return new EndpointProbeError((err.message.includes("is not JSON") ? `${request}: the endpoint's answer is not JSON` : err.message).slice(0, 500));
  throw err;
}

/**
 * Probes a caller's endpoint through the outbound guard before it is registered. A protocol-v2
 * endpoint must answer its policy's state (`GET /v2/policies/{policy}`: the version is its weight
 * version). Any other kind must sample one token in a token mode of its kind, exactly as rescues
 * will (`TOKEN_MODES`): the mode asked for, or each of the kind's in order (tokens in first) until
 * one answers with ids and log-probabilities; that mode is recorded. A server with none is refused:
 * `ENDPOINT_NOT_TOKEN_EXACT` naming what each mode got (a kind with one mode, or a mode asked for,
 * its own answer: `ENDPOINT_NO_TOKEN_IDS` for text only; ids re-tokenised from text would not
 * match their log-probabilities). A refused URL is refused at once (`URL_NOT_ALLOWED`).
 *
 * @example
 * const prober = new HttpEndpointProber({ allowLoopback: false }, systemClock);
 */
export class HttpEndpointProber implements EndpointProber {
  private readonly fetch: typeof fetch;

  constructor(
    outbound: OutboundPolicy,
    private readonly clock: Clock,
    private readonly limits = { maxBytes: 1 << 20, deadlineMs: 15_000 },
  ) {
    this.fetch = outboundFetch(outbound, limits);
  }

  private client(endpoint: RegisterPolicyEndpoint): ServedClient {
    const headers = endpoint.secretHeader ? { [endpoint.secretHeader.name]: endpoint.secretHeader.value } : undefined;
    return new ServedClient(endpoint.url.replace(/\/+$/, ""), {
      clock: this.clock,
      fetch: this.fetch,
      timeoutMs: this.limits.deadlineMs,
      retries: 0,
      ...(headers ? { headers } : {}),
    });
  }

  async probe(endpoint: RegisterPolicyEndpoint): Promise<EndpointProbe> {
    if (endpoint.kind === "protocol-v2") return this.protocolV2(endpoint);
    const modes = endpoint.mode ? [endpoint.mode] : KIND_MODES[endpoint.kind];
    const failed: [TokenMode, EndpointProbeError][] = [];
    for (const mode of modes) {
      try {
        return await this.sampleOne(endpoint, mode);
      } catch (err) {
        if ((err as { code?: string }).code === "URL_NOT_ALLOWED") throw err;
        failed.push([mode, reason(err, endpoint.policy)]);
      }
    }
    if (failed.length === 1) throw failed[0]![1];
    throw new EndpointNotTokenExactError(
      `the ${endpoint.kind} server offers no token-exact mode: ${failed.map(([mode, err]) => `${mode}: ${err.message}`).join("; ")} (tokens in needs /tokenize with messages; messages in needs prompt_token_ids, token_ids and logprobs)`,
    );
  }

  /** One token sampled in `mode`, as a rescue's first turn samples it. */
  private async sampleOne(endpoint: RegisterPolicyEndpoint, mode: TokenMode): Promise<EndpointProbe> {
    const target = { client: this.client(endpoint), model: endpoint.policy, baseModel: endpoint.policy, chatPath: CHAT_PATHS[endpoint.kind] };
    const turn = await TOKEN_MODES[mode](target, []).turn([{ role: "user", content: "ping" }], { temperature: 1, top_p: 1, max_tokens: 1 });
    if (!turn.completionIds.length) throw new EndpointProbeError(`${mode}: the endpoint sampled no token`, "ENDPOINT_NO_TOKEN_IDS");
    return { weightVersion: versionOf(turn.model), checkedAt: this.clock.now(), mode };
  }

  private async protocolV2(endpoint: RegisterPolicyEndpoint): Promise<EndpointProbe> {
    const headers = endpoint.secretHeader ? { [endpoint.secretHeader.name]: endpoint.secretHeader.value } : {};
    const path = `/v2/policies/${encodeURIComponent(endpoint.policy)}`;
    let res: Response;
    try {
      res = await this.fetch(`${endpoint.url.replace(/\/+$/, "")}${path}`, { method: "GET", headers });
    } catch (err) {
      // A refused URL keeps its own code (URL_NOT_ALLOWED); anything else is the endpoint not answering.
      if ((err as { code?: string }).code === "URL_NOT_ALLOWED") throw err;
      throw new EndpointProbeError(`the endpoint did not answer (${(err as Error).name})`);
    }
    if (!res.ok) throw new EndpointProbeError(`the endpoint answered HTTP ${res.status} to GET ${path}`);
    let json: unknown;
    try {
      json = await res.json();
    } catch {
      throw new EndpointProbeError(`the endpoint's answer to ${path} is not JSON`);
    }
    const state = PolicyStateV2.safeParse(json);
    if (!state.success) throw new EndpointProbeError("the endpoint's policy state is not protocol v2's");
    return { weightVersion: state.data.version, checkedAt: this.clock.now() };
  }
}
