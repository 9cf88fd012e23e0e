import { ValidationError } from "@harness-s/core";
import { panelQuorum, panelWeights, type PanelSettings, type Voter, type VoterPanel } from "@harness-s/core/voting";
import { REPLY_BYTES, boundedOpenAi } from "./bounded-fetch.ts";
import { OpenAiVoter } from "./openai-voter.ts";

/**
 * What a router needs from a panel: its voters, and the settings every decision passes on (their
 * weights and quorum, the fallback voters if it names them, each voter's deadline: the router's
 * `voterTimeoutMs` is one value, the panel's longest).
 */
export interface PanelRouting extends PanelSettings {
  voters: Voter[];
  timeoutMs: number;
}

/**
 * The panel's voters: statistical ones by id from `statistical`, LLM ones as `OpenAiVoter`s on
 * their own OpenAI-compatible endpoints (the SDK retries a dropped connection or a 429/5xx once;
 * the voter retries a malformed answer once itself; the router's deadline bounds both). A key named by a voter and
 * missing is an error
 * here, before any decision.
 *
 * @example
 * const routing = votersFromPanel(panel, { apiKey: (name) => process.env[name], statistical: statisticalVoters });
 * await route(input, { k: 2, ...routing.options, voterTimeoutMs: routing.timeoutMs }, { voters: routing.voters, fallback: routing.fallback, rng, clock });
 */
export function votersFromPanel(
  panel: VoterPanel,
  deps: { apiKey: (secretName: string) => string | undefined; statistical: readonly Voter[] },
): PanelRouting {
  const problems: string[] = [];
  const voters = panel.voters.flatMap((v): Voter[] => {
    if (v.kind === "statistical") {
      const found = deps.statistical.find((s) => s.id === v.id);
      if (!found)
        problems.push(
          `voters.${v.id}: no statistical voter ${JSON.stringify(v.id)} (known: ${deps.statistical.map((s) => s.id).join(", ")})`,
        );
      return found ? [found] : [];
    }
    const apiKey = v.apiKeySecret ? deps.apiKey(v.apiKeySecret) : "not-needed";
    if (apiKey === undefined) {
      problems.push(`voters.${v.id}: the secret ${v.apiKeySecret} is not set`);
      return [];
    }
    // One SDK retry, for a dropped connection or a 429/5xx only (a server closing an idle keep-alive
    // socket as it is reused is routine); a malformed answer is the voter's own retry.
    const client = boundedOpenAi({
      baseURL: v.baseURL,
      apiKey,
      timeoutMs: v.timeoutMs,
      maxRetries: 1,
      maxReplyBytes: REPLY_BYTES.ballot,
    });
    return [new OpenAiVoter(client, { id: v.id, model: v.model, maxTokens: v.maxTokens, price: v.price })];
  });
  if (problems.length) throw new ValidationError("voter panel", problems);
  const timeouts = panel.voters.map((v) => (v.kind === "llm" ? v.timeoutMs : 0));
  return {
    voters,
    options: { weights: panelWeights(panel), quorum: panelQuorum(panel) },
    ...(panel.onQuorumMiss === "statistical" ? { fallback: deps.statistical } : {}),
    timeoutMs: Math.max(1_000, ...timeouts),
  };
}
