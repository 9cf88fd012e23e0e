import { z } from "zod";
import type { PoolEvolutionWorkerDeps } from "@harness-s/core/pools";
import { OpenAiProposer, boundedOpenAi } from "@harness-s/adapters/llm";

/**
 * The LLM proposer pool evolutions use where a deployment configures one (the `PoolProposer`
 * secret, JSON; its key the `LlmApiKey` secret): an OpenAI-compatible base URL, the model and the
 * calls one evolution may make. None: the template (mutation) proposer.
 */
export const PoolProposerConfig = z.strictObject({
  baseUrl: z.url({ protocol: /^https?$/ }),
  model: z.string().min(1).max(200),
  maxCalls: z.number().int().min(1).max(1_000).default(40),
});
export type PoolProposerConfig = z.infer<typeof PoolProposerConfig>;

/**
 * One OpenAiProposer per evolution (its call budget is the job's), shown the caller's tools and
 * events and kept from quoting the dev tasks' ids and reset values.
 *
 * @example
 * const proposer = llmPoolProposer({ baseUrl: "https://api.openai.com/v1", model: "gpt-4o-mini", maxCalls: 40 }, key);
 */
export function llmPoolProposer(
  config: PoolProposerConfig,
  apiKey: string | undefined,
): NonNullable<PoolEvolutionWorkerDeps["proposer"]> {
  return (context) =>
    new OpenAiProposer(
      boundedOpenAi({ baseURL: config.baseUrl, apiKey: apiKey ?? "none", maxRetries: 1, timeoutMs: 120_000 }),
      {
        model: config.model,
        maxCalls: config.maxCalls,
        leaks: context.leaks,
        tools: context.tools,
        events: [...context.events],
      },
    );
}
