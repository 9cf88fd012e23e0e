import type { Clock } from "@harness-s/core";
import type { EndpointProbe, EndpointProber, RegisterPolicyEndpoint } from "@harness-s/core/callers";
import { ENDPOINT_KIND_ADAPTERS } from "../policy/kinds/index.ts";
import { outboundFetch, type OutboundPolicy } from "./outbound.ts";

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

  /**
   * Probes `endpoint` as its kind's adapter does (`ENDPOINT_KIND_ADAPTERS`), through the outbound
   * guard, within the probe's limits (a body of 1 MiB, 15 s).
   */
  async probe(endpoint: RegisterPolicyEndpoint): Promise<EndpointProbe> {
    return ENDPOINT_KIND_ADAPTERS[endpoint.kind].probe(endpoint, {
      fetch: this.fetch,
      clock: this.clock,
      timeoutMs: this.limits.deadlineMs,
    });
  }
}
