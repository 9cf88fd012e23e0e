// OpenAI-compatible LLMs: voters, the gateway's upstream, the proposer, the tool-calling policy, bounded fetches.
export { boundedFetch, boundedOpenAi, REPLY_BYTES, type BoundedClientOptions } from "./bounded-fetch.ts";
export { ballotPrompt, extractJson, LlmBallotAnswer, type OpenAiVoterOptions, OpenAiVoter } from "./openai-voter.ts";
export { ChatCompletionRead, type OpenAiUpstreamOptions, OpenAiUpstream } from "./openai-upstream.ts";
export { type ProposerReport, type OpenAiProposerOptions, OpenAiProposer } from "./openai-proposer.ts";
export { votersFromPanel, type PanelRouting } from "./panel-voters.ts";
export {
  type ToolBinding,
  INVALID_TOOL_CALL,
  NO_TOOL_CALL,
  UNKNOWN_TOOL_PREFIX,
  type OpenAiPolicyOptions,
  OpenAiToolPolicy,
} from "./openai-policy.ts";
