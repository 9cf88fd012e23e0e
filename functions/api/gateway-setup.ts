import { GATEWAY_LIMITS, GatewayEpisodes, genericObserver, type GatewayEpisodeStore } from "@harness-s/core/gateway";
import { MemoryGatewayEpisodeStore, OpenAiUpstream, boundedOpenAi } from "@harness-s/adapters";
import { BUNDLED_DATA_DIR, dbbenchObserver, loadSplit, parseArgumentsPy } from "@harness-s/dbbench";
import { appworldObserver, sweObserver } from "@harness-s/envs";
import { GatewayConfig } from "./gateway-config.ts";
import type { GatewaySettings } from "./deps.ts";

export { GatewayConfig };

export type GatewayOptions = GatewayConfig & {
  /** Where episodes live between requests (serve: DynamoDB Local; the API Lambda: DynamoDB; default: this process's memory). */
  store?: GatewayEpisodeStore;
};

/** How long the gateway waits for one whole completion from its model endpoint. */
export const UPSTREAM_TIMEOUT_MS = 120_000;

/**
 * The Rank-1 gateway's settings for `serve`: the upstream client, the episodes in `store` (closed
 * after 30 idle minutes), and the environment's reading of tool outputs (AppWorld's `execute`
 * and SWE-Gym's tools as this project's environments name their events). `dbbench` knows every
 * bundled row by id (send it as `x-harness-s-task-id` for the schema preview and the answer
 * check), AgentBench's commit tool and its Python-style arguments.
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
  const upstream = new OpenAiUpstream(client, { ...(opts.model ? { model: opts.model } : {}), ...(opts.returnTokenIds ? { returnTokenIds: true } : {}) });
  const episodes = new GatewayEpisodes(opts.store ?? new MemoryGatewayEpisodeStore());
  const common = { upstream, episodes, poolId: opts.pool, maxBodyBytes: GATEWAY_LIMITS.maxBodyBytes };
  if (opts.env === "generic") return { ...common, observerFor: genericObserver, submitTool: "submit", defaultFamily: "default" };
  if (opts.env === "appworld") return { ...common, observerFor: appworldObserver, submitTool: "complete_task", defaultFamily: "appworld" };
  if (opts.env === "swe-gym") return { ...common, observerFor: sweObserver({ testsBlocked: false }), submitTool: "submit", defaultFamily: "swe" };
  const rows = [...(await loadSplit(BUNDLED_DATA_DIR, "dev")), ...(await loadSplit(BUNDLED_DATA_DIR, "standard"))];
  return {
    ...common,
    observerFor: dbbenchObserver(new Map(rows.map((r) => [r.id, r]))),
    submitTool: "commit_final_answer",
    defaultFamily: "dbbench",
    parseArguments: parseArgumentsPy,
  };
}
