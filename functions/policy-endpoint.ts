import { systemClock } from "@harness-s/core";
import type { PolicyEndpoints } from "@harness-s/core/rescue";
import { AutoPolicyEndpoints, HttpPolicyEndpoints, TokenPolicyClient, TokenPolicyEndpoints, type SharedSamplingOptions, type SharedTokenPolicyOptions } from "@harness-s/adapters";
import { EMBEDDED_AGENT_SYSTEM, EmbeddedEnvironment, TextEnvironment, embeddedToolSchemas } from "@harness-s/envs";

/** How the dispatch worker samples a run's token policies at a protocol-v2 endpoint (the embedded suite's text rendering). */
export const sharedTokenSampling: SharedSamplingOptions = { system: EMBEDDED_AGENT_SYSTEM, toolSchemas: embeddedToolSchemas, maxTokens: 256 };

/** The settings the coordinator creates and trains a run's token policies with: its sampling, an adapter and a rate. */
export const sharedTokenPolicy: SharedTokenPolicyOptions = {
  ...sharedTokenSampling,
  baseModel: "endpoint",
  lora: { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj"] },
  learningRate: 1e-5,
};

/** A client of this deployment's policy endpoint; `onDeviceSeconds` meters the GPU time it reports (the cost of goods). */
export const tokenClient = (url: string, token?: string, onDeviceSeconds?: (s: number) => void) =>
  new TokenPolicyClient(url, { token, clock: systemClock, ...(onDeviceSeconds ? { onDeviceSeconds } : {}) });

/**
 * The dispatch worker's endpoints: protocol v2 when the endpoint says it speaks it (the reference
 * worker), else v1 (the embedded `policy-serve`); decided on the first rollout.
 */
export function dispatchEndpoints(url: string, token?: string, onDeviceSeconds?: (s: number) => void): PolicyEndpoints {
  const env = new EmbeddedEnvironment();
  return new AutoPolicyEndpoints(
    url,
    { v1: () => new HttpPolicyEndpoints(url, env), v2: () => new TokenPolicyEndpoints(tokenClient(url, token, onDeviceSeconds), new TextEnvironment(env), sharedTokenSampling) },
    token,
  );
}
