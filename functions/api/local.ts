import { serve, type ServerType } from "@hono/node-server";
import { Prices, statisticalVoters, systemClock } from "@harness-s/core";
import {
  MemoryApiKeyStore,
  MemoryDecisionStore,
  MemoryExperimentStore,
  MemoryExperimentStepStore,
  MemoryPoolStore,
  MemoryProfileStore,
  MemoryQueue,
  MemoryRescueJobStore,
  MemoryRolloutStore,
  MemoryUsageMeter,
} from "@harness-s/adapters";
import type { ApiDeps } from "./deps.ts";

/** API deps on in-memory adapters (ids from a counter); override any part to test an adapter. */
export function memoryApiDeps(over: Partial<ApiDeps> = {}): ApiDeps {
  let n = 0;
  return {
    pools: new MemoryPoolStore(),
    profiles: new MemoryProfileStore(),
    decisions: new MemoryDecisionStore(),
    keys: new MemoryApiKeyStore(),
    meter: new MemoryUsageMeter(),
    evidence: new MemoryQueue(),
    jobs: new MemoryRescueJobStore(),
    dispatch: new MemoryQueue(),
    rollouts: new MemoryRolloutStore(),
    tasks: { get: async () => undefined },
    voters: statisticalVoters,
    experiments: new MemoryExperimentStore(),
    experimentSteps: new MemoryExperimentStepStore(),
    coordinator: new MemoryQueue(),
    prices: Prices.parse({}),
    clock: systemClock,
    newId: (kind = "dec") => `${kind}_${++n}`,
    maxBodyBytes: 64 * 1024,
    ...over,
  };
}

/** Serves `fetch` over HTTP with @hono/node-server; port 0 picks a free one. */
export async function listen(fetch: (req: Request) => Response | Promise<Response>, port = 0, hostname = "127.0.0.1"): Promise<{ url: string; close: () => Promise<void> }> {
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch, port, hostname }, () => resolve(s));
  });
  const address = server.address();
  const actual = typeof address === "object" && address ? address.port : port;
  return { url: `http://${hostname}:${actual}`, close: () => new Promise((r) => server.close(() => r())) };
}
