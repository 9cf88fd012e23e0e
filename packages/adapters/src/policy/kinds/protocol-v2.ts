import type { Rollout } from "@harness-s/core";
import { PolicyStateV2 } from "@harness-s/core/protocol";
import type { PolicyEndpointRecord } from "@harness-s/core/callers";
import { EndpointProbeError } from "../../errors.ts";
import { whyUnanswered } from "../json-transport.ts";
import { TokenPolicyClient } from "../token-policy-client.ts";
import { TokenSampler } from "../token-sampler.ts";
import { baseOf, headerOf, rendering, settingsOf, type EndpointKindAdapter, type Transport } from "./kind.ts";

const clientOf = (record: PolicyEndpointRecord, { fetch, clock, timeoutMs }: Transport) => {
  const headers = headerOf(record.secretHeader);
  return new TokenPolicyClient(baseOf(record.url), { clock, fetch, timeoutMs, ...(headers ? { headers } : {}) });
};

/**
 * Protocol v2: the endpoint's policy, attached (never created or updated here) at the rescue's
 * pinned version, so a trainer that moved on gets a clear 409; rows as sampled or, under H0's
 * context, replayed and re-scored there at that version (protocol v2's replay). Its probe reads
 * the policy's state (`GET /v2/policies/{policy}`: its version is the weight version).
 */
export const protocolV2: EndpointKindAdapter = {
  sampler(record, caller, transport) {
    const client = clientOf(record, transport);
    const policy = new TokenSampler(client, {
      policyId: record.policy,
      expectVersion: caller.weightVersion,
      ...rendering(caller),
    });
    return {
      policy,
      spent: () => ({
        policyTokens: client.sampled.promptTokens + client.sampled.completionTokens,
        policyMs: client.sampled.ms,
      }),
      rows: async (rollouts, context) => {
        if (context === "base") await policy.ensure();
        const one = (rollout: Rollout) =>
          policy.datums({ samples: [{ rollout, advantage: rollout.reward }], settings: settingsOf(context) });
        return (await Promise.all(rollouts.map(one))).map((datums) =>
          datums.length ? { datums, segmented: false } : undefined,
        );
      },
    };
  },
  currentVersion: async (record, transport) => (await clientOf(record, transport).state(record.policy)).version,
  async probe(endpoint, { fetch, clock }) {
    const headers = headerOf(endpoint.secretHeader) ?? {};
    const path = `/v2/policies/${encodeURIComponent(endpoint.policy)}`;
    let res: Response;
    try {
      res = await fetch(`${baseOf(endpoint.url)}${path}`, { method: "GET", headers });
    } catch (err) {
      // A refused URL keeps its own code (URL_NOT_ALLOWED); anything else is the endpoint not answering.
      if ((err as { code?: string }).code === "URL_NOT_ALLOWED") throw err;
      throw new EndpointProbeError(`the endpoint did not answer GET ${path}: ${whyUnanswered(err)}`);
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
    return { weightVersion: state.data.version, checkedAt: clock.now() };
  },
};
