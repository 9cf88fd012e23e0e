import { systemClock } from "@harness-s/core";
import type { PolicyEndpoints } from "@harness-s/core/dispatch";
import {
  AutoPolicyEndpoints,
  HttpPolicyEndpoints,
  TokenPolicyClient,
  TokenPolicyEndpoints,
  type SharedSamplingOptions,
  type SharedTokenPolicyOptions,
} from "@harness-s/adapters/policy";
import { EMBEDDED_AGENT_SYSTEM, EmbeddedEnvironment, TextEnvironment, embeddedToolSchemas } from "@harness-s/envs";

/**
 * How the dispatch worker samples a run's token policies at a protocol-v2 endpoint (the embedded suite's text
 * rendering).
 */
export const sharedTokenSampling: SharedSamplingOptions = {
  system: EMBEDDED_AGENT_SYSTEM,
  toolSchemas: embeddedToolSchemas,
  maxTokens: 256,
};

/** The settings the coordinator creates and trains a run's token policies with: its sampling, an adapter and a rate. */
export const sharedTokenPolicy: SharedTokenPolicyOptions = {
  ...sharedTokenSampling,
  baseModel: "endpoint",
  lora: { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj"] },
  learningRate: 1e-5,
};

/**
 * What the policy endpoint's client reports to the cost-of-goods meter: the GPU time it was told of, and the tokens it
 * sampled and trained.
 */
export type EndpointMeter = (used: {
  gpuSeconds?: number;
  sampledTokens?: number;
  trainedTokens?: number;
  generatedTokens?: number;
}) => void;

/**
 * A client of this deployment's policy endpoint; `meter` hears the GPU time it reports (the cost of goods) and the
 * tokens sampled and trained (what quotes rest on).
 */
export const tokenClient = (url: string, token?: string, meter?: EndpointMeter) =>
  new TokenPolicyClient(url, {
    token,
    clock: systemClock,
    ...(meter ? { onDeviceSeconds: (s: number) => meter({ gpuSeconds: s }), onTokens: meter } : {}),
  });

/**
 * The dispatch worker's endpoints: protocol v2 when the endpoint says it speaks it (the reference
 * worker), else v1 (the embedded `policy-serve`); decided on the first rollout.
 */
export function dispatchEndpoints(url: string, token?: string, meter?: EndpointMeter): PolicyEndpoints {
  const env = new EmbeddedEnvironment();
  return new AutoPolicyEndpoints(
    url,
    {
      v1: () => new HttpPolicyEndpoints(url, env),
      v2: () => new TokenPolicyEndpoints(tokenClient(url, token, meter), new TextEnvironment(env), sharedTokenSampling),
    },
    token,
  );
}
