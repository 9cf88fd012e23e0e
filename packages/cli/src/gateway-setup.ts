import { GATEWAY_LIMITS, GatewayEpisodes, genericObserver } from "@harness-s/core";
import { OpenAiUpstream, boundedOpenAi } from "@harness-s/adapters";
import { BUNDLED_DATA_DIR, dbbenchObserver, loadSplit, parseArgumentsPy } from "@harness-s/dbbench";
import type { GatewaySettings } from "@harness-s/functions/api/deps";

export interface GatewayOptions {
  /** The model endpoint's base URL (any OpenAI-compatible server; a policy worker's `/v1`). */
  upstream: string;
  /** Its API key (default: the HARNESS_S_GATEWAY_UPSTREAM_KEY variable, else none). */
  apiKey?: string;
  /** The model name sent upstream (default: the agent's). */
  model?: string;
  /** The pool to route between. */
  pool: string;
  /** How tool outputs are read: `dbbench` (SQL results, AgentBench's tools) or `generic`. */
  env: "generic" | "dbbench";
  /** Ask the endpoint for token ids (vLLM's `return_token_ids`). */
  returnTokenIds?: boolean;
  /** How long one completion may take, headers and body (default {@link UPSTREAM_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/** How long the gateway waits for one whole completion from its model endpoint. */
export const UPSTREAM_TIMEOUT_MS = 120_000;

/**
 * The Rank-1 gateway's settings for `serve`: the upstream client, the live episodes (closed
 * after 30 idle minutes), and the environment's reading of tool outputs. `dbbench` knows every
 * bundled row by id (send it as `x-harness-s-task-id` for the schema preview and the answer
 * check), AgentBench's commit tool and its Python-style arguments.
 *
 * @example
 * const gateway = await gatewaySettings({ upstream: "http://127.0.0.1:8000/v1", pool: "dbbench", env: "dbbench" });
 */
export async function gatewaySettings(opts: GatewayOptions): Promise<GatewaySettings> {
  const client = boundedOpenAi({
    baseURL: opts.upstream,
    apiKey: opts.apiKey ?? process.env.HARNESS_S_GATEWAY_UPSTREAM_KEY ?? "none",
    timeoutMs: opts.timeoutMs ?? UPSTREAM_TIMEOUT_MS,
    maxRetries: 1,
  });
  const upstream = new OpenAiUpstream(client, { ...(opts.model ? { model: opts.model } : {}), ...(opts.returnTokenIds ? { returnTokenIds: true } : {}) });
  const episodes = new GatewayEpisodes(GATEWAY_LIMITS);
  const common = { upstream, episodes, poolId: opts.pool, maxBodyBytes: GATEWAY_LIMITS.maxBodyBytes };
  if (opts.env === "generic") return { ...common, observerFor: genericObserver, submitTool: "submit", defaultFamily: "default" };
  const rows = [...(await loadSplit(BUNDLED_DATA_DIR, "dev")), ...(await loadSplit(BUNDLED_DATA_DIR, "standard"))];
  return {
    ...common,
    observerFor: dbbenchObserver(new Map(rows.map((r) => [r.id, r]))),
    submitTool: "commit_final_answer",
    defaultFamily: "dbbench",
    parseArguments: parseArgumentsPy,
  };
}
