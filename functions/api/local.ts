import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { serve, type ServerType } from "@hono/node-server";
import { Prices } from "@harness-s/core/billing";
import { statisticalVoters } from "@harness-s/core/voting";
import { systemClock } from "@harness-s/core";
import {
  MemoryApiKeyStore,
  MemoryDecisionStore,
  MemoryExperimentStore,
  MemoryExperimentStepStore,
  MemoryPoolStore,
  MemoryPoolEvolutionStore,
  MemoryProfileStore,
  MemoryQueue,
  MemoryRescueJobStore,
  MemoryRescueSlots,
  MemoryPolicyEndpointStore,
  MemoryRolloutStore,
  MemoryUsageMeter,
  MemoryKeyEventLog,
} from "@harness-s/adapters/stores";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import type { ApiDeps } from "./deps.ts";
import { BODY_TIMEOUTS } from "./request-limits.ts";

/** API deps on in-memory adapters (ids from a counter); override any part to test an adapter. */
export function memoryApiDeps(over: Partial<ApiDeps> = {}): ApiDeps {
  let n = 0;
  return {
    pools: new MemoryPoolStore(),
    profiles: new MemoryProfileStore(),
    decisions: new MemoryDecisionStore(),
    keys: new MemoryApiKeyStore(),
    keyEvents: new MemoryKeyEventLog(),
    meter: new MemoryUsageMeter(),
    evidence: new MemoryQueue(),
    jobs: new MemoryRescueJobStore(),
    rescueSlots: new MemoryRescueSlots(),
    dispatch: new MemoryQueue(),
    rollouts: new MemoryRolloutStore(),
    endpoints: new MemoryPolicyEndpointStore(),
    prober: new HttpEndpointProber({ allowLoopback: false }, systemClock),
    tasks: { get: async () => undefined },
    voters: statisticalVoters,
    experiments: new MemoryExperimentStore(),
    experimentSteps: new MemoryExperimentStepStore(),
    poolEvolutions: new MemoryPoolEvolutionStore(),
    coordinator: new MemoryQueue(),
    prices: Prices.parse({}),
    clock: systemClock,
    newId: (kind = "dec") => `${kind}_${++n}`,
    maxBodyBytes: 64 * 1024,
    ...over,
  };
}

/** How long a request's headers may take to arrive before the server drops the connection. */
export const HEADERS_TIMEOUT_MS = 10_000;

/**
 * Serves `fetch` over HTTP with @hono/node-server; port 0 picks a free one. A request that asks
 * `Expect: 100-continue` is answered 413 before any of its body is sent when its declared length
 * is over its route's limit (`bodyLimit`, by path; {@link bodyLimitOf} for the API), 417 for any
 * other expectation. Headers that take longer than {@link HEADERS_TIMEOUT_MS} drop the connection
 * (checked every second, not at Node's default 30 s), as does a request longer than twice the
 * body deadline in all.
 */
export async function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  port = 0,
  hostname = "127.0.0.1",
  opts: { bodyLimit?: (path: string) => number } = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  // A port in use (EADDRINUSE) or not ours to bind (EACCES) rejects here, for the caller to clean up and say so.
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve(
      {
        fetch,
        port,
        hostname,
        serverOptions: { headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1_000 },
      },
      () => {
        s.off("error", reject);
        resolve(s);
      },
    );
    s.once("error", reject);
  });
  const http = server as Server;
  http.headersTimeout = HEADERS_TIMEOUT_MS;
  http.requestTimeout = 2 * (BODY_TIMEOUTS.deadlineMs + 5_000);
  const refuse = (res: ServerResponse, status: number, code: string, message: string) => {
    res.writeHead(status, { "content-type": "application/json", connection: "close" });
    res.end(JSON.stringify({ error: { code, message } }));
  };
  http.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    const declared = Number(req.headers["content-length"] ?? Number.NaN);
    const limit = opts.bodyLimit?.(new URL(req.url ?? "/", "http://x").pathname);
    if (limit !== undefined && declared > limit)
      return refuse(res, 413, "PAYLOAD_TOO_LARGE", `request body exceeds ${limit} bytes`);
    res.writeContinue();
    http.emit("request", req, res);
  });
  http.on("checkExpectation", (_req: IncomingMessage, res: ServerResponse) =>
    refuse(res, 417, "EXPECTATION_FAILED", "only Expect: 100-continue is understood"),
  );
  const address = server.address();
  const actual = typeof address === "object" && address ? address.port : port;
  return { url: `http://${hostname}:${actual}`, close: () => new Promise((r) => server.close(() => r())) };
}
