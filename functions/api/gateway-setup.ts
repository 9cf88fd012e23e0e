import { GATEWAY_LIMITS, GatewayEpisodes, genericObserver, type GatewayEpisodeStore } from "@harness-s/core/gateway";
import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import { OpenAiUpstream, boundedOpenAi } from "@harness-s/adapters/llm";
import type { GatewayReading } from "@harness-s/envs";
import { familyFor } from "../families.ts";
import { GENERIC_GATEWAY_ENV, GatewayConfig } from "./gateway-config.ts";
import type { GatewaySettings } from "./deps.ts";

export { GatewayConfig };

export type GatewayOptions = GatewayConfig & {
  /**
   * Where episodes live between requests (serve: DynamoDB Local; the API Lambda: DynamoDB; default: this process's
   * memory).
   */
  store?: GatewayEpisodeStore;
};

/** How long the gateway waits for one whole completion from its model endpoint. */
export const UPSTREAM_TIMEOUT_MS = 120_000;

/**
 * The Rank-1 gateway's settings for `serve`: the upstream client, the episodes in `store` (closed
 * after 30 idle minutes), and the environment's reading of tool outputs: generic, or the named
 * benchmark family's (its observer, committing tool and default task family; e.g. `dbbench` knows
 * every bundled row by id: send it as `x-harness-s-task-id` for the schema preview and the answer
 * check).
 *
 * @example
 * const gateway = await gatewaySettings({ upstream: "http://127.0.0.1:8000/v1", pool: "dbbench", env: "dbbench" });
 */
export async function gatewaySettings(options: GatewayOptions): Promise<GatewaySettings> {
  const { store, ...config } = options;
  const opts = { ...GatewayConfig.parse(config), store };
  const client = boundedOpenAi({
    baseURL: opts.upstream,
    apiKey: opts.apiKey ?? process.env.HARNESS_S_GATEWAY_UPSTREAM_KEY ?? "none",
    timeoutMs: opts.timeoutMs ?? UPSTREAM_TIMEOUT_MS,
    maxRetries: 1,
  });
  const upstream = new OpenAiUpstream(client, {
    ...(opts.model ? { model: opts.model } : {}),
    ...(opts.returnTokenIds ? { returnTokenIds: true } : {}),
  });
  const episodes = new GatewayEpisodes(opts.store ?? new MemoryGatewayEpisodeStore());
  const common = { upstream, episodes, poolId: opts.pool, maxBodyBytes: GATEWAY_LIMITS.maxBodyBytes };
  return { ...common, ...(await gatewayReading(opts.env ?? GENERIC_GATEWAY_ENV)) };
}

/**
 * How the gateway reads tool outputs on `env`: generic (an output starting with "error" failed), or a family's reading.
 */
async function gatewayReading(env: string): Promise<GatewayReading> {
  if (env === GENERIC_GATEWAY_ENV)
    return { observerFor: genericObserver, submitTool: "submit", defaultFamily: "default" };
  return familyFor(env, "gateway").gateway!();
}
