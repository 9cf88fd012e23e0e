// The policy clients: the worker's protocol v2 (token sampler and trainer), served kinds (vLLM, SGLang, OpenAI chat),
// caller policies, endpoint kinds.
export { remoteUnitPolicies, RemotePolicy, HttpPolicyEndpoints } from "./http-policy.ts";
export { type TokenPolicyClientOptions, TokenPolicyClient } from "./token-policy-client.ts";
export { type TokenSamplerOptions, type DatumSettings, TokenSampler } from "./token-sampler.ts";
export { type TokenTrainerOptions, TokenTrainer } from "./token-trainer.ts";
export { underBase, turnText, firstMessages, nextMessage, readsDifferentlyUnderBase } from "./token-render.ts";
export {
  workerPolicyId,
  policyProtocol,
  seedOfUnit,
  tokenUnitPolicies,
  type SharedTokenPolicyOptions,
  type SharedSamplingOptions,
  TokenPolicyEndpoints,
  AutoPolicyEndpoints,
} from "./token-endpoints.ts";
export { ServedClient } from "./served-client.ts";
export {
  type ServedTarget,
  type ServedSampling,
  type ServedTurn,
  type ServedEpisode,
  MissingIdsError,
  TOKEN_MODES,
} from "./served-modes.ts";
export { type ServedSamplerOptions, ServedSampler } from "./served-sampler.ts";
export { choiceOf, hermesToolCalls, type SampledCall } from "./tool-choice.ts";
export { type CallerPoliciesDeps, CallerPolicyRunners } from "./caller-policies.ts";
export { type CallerSampler, type EndpointKindAdapter, type Transport, ENDPOINT_KIND_ADAPTERS } from "./kinds/index.ts";
