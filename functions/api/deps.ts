import { type ApiKeyStore, KEY_CHANGE_SECONDS, type KeyEventLog, type RateGate } from "@harness-s/core/access";
import type { Clock, PoolStore, RolloutStore, TaskSource } from "@harness-s/core";
import type { ExperimentArtifacts, ExperimentStore, ExperimentStepStore } from "@harness-s/core/experiment";
import type { ServedOffers } from "@harness-s/core/models";
import type { GatewayDeps } from "@harness-s/core/gateway";
import type { Prices, PriceList, UsageMeter } from "@harness-s/core/billing";
import type { CallerPolicies, RescueSlots } from "@harness-s/core/dispatch";
import type { EndpointProber, PolicyEndpointStore } from "@harness-s/core/callers";
import type { RescueJobStore, RescueProgress } from "@harness-s/core/rescue";
import type { DecisionStore, RouteTaskDeps } from "@harness-s/core/routing";
import type { MessageQueue } from "@harness-s/core/messaging";
import type { ProfileStore } from "@harness-s/core/profile";
import type { PoolEvolutionStore } from "@harness-s/core/pools";
import type { Voter } from "@harness-s/core/voting";
import type { EventLogger, MetricsSource } from "@harness-s/core/observability";
import { CachedKeyStore, CachedPoolStore } from "@harness-s/adapters/stores";
import type { ConsumptionMeter } from "@harness-s/adapters/metering";
import type { BodyTimeouts } from "./request-limits.ts";
import type { ConsoleAssets } from "./console.ts";

/** What the API needs; the composition root (serve, Lambda) injects real or in-memory adapters. */
export interface ApiDeps {
  pools: PoolStore;
  profiles: ProfileStore;
  decisions: DecisionStore;
  keys: ApiKeyStore;
  /** Each key's operations (created, updated, rotated, revoked), for admins to read. */
  keyEvents: KeyEventLog;
  /**
   * Each key's rate: shared buckets leased in blocks (deployed and `serve`: `SharedKeyRate`), or this instance's; none:
   * createApp makes this instance's (requests past a key's rate are a 429).
   */
  rate?: RateGate;
  meter: UsageMeter;
  /** Where reported outcomes go; the `profile` worker applies them. */
  evidence: MessageQueue;
  /** Elastic rescues: jobs, the dispatch queue their rollouts fan out to, where results land. */
  jobs: RescueJobStore;
  dispatch: MessageQueue;
  rollouts: RolloutStore;
  /**
   * The policy endpoints keys registered for their rescues, and how a new one is probed (through the outbound guard).
   */
  endpoints: PolicyEndpointStore;
  prober: EndpointProber;
  /**
   * Rescues with a caller's own policy and environment (their pinned version, their token rows); none: such a rescue is
   * 501.
   */
  callers?: CallerPolicies;
  /**
   * Where a waiting status read hears that a rescue's rollout was stored (serve: the workers' thread tells it); none:
   * it looks (`RESCUE_WAIT`).
   */
  progress?: RescueProgress;
  /** Each key's rescue rollouts in flight (`RESCUE_SLOTS`); none: unlimited. */
  rescueSlots?: RescueSlots;
  tasks: TaskSource;
  voters: readonly Voter[];
  /** The voter panel's weights, quorum and fallback, when one is configured (`serve --voters`). */
  panel?: RouteTaskDeps["panel"];
  /** Decisions served again to identical requests (`/v1/route`); none: every request votes. */
  decisionCache?: RouteTaskDeps["decisionCache"];
  /** Experiments: records, the coordinator queue that runs them, the prices their cost is shown in. */
  experiments: ExperimentStore;
  experimentSteps: ExperimentStepStore;
  /** Finished runs' reports and plots, as the coordinator stored them; none: their routes answer 501. */
  artifacts?: ExperimentArtifacts;
  /**
   * What experiments may run on: the environments, and the base models the policy endpoint serves (`GET /v1/models`; an
   * experiment's `model`); none: the embedded suite with its own policy.
   */
  offers?: ServedOffers;
  /** Pool evolutions for callers' environments (`POST /v1/pools` with `evolve`), run by the coordinator; none: 501. */
  poolEvolutions?: PoolEvolutionStore;
  coordinator: MessageQueue;
  prices: Prices;
  /** What this deployment pays its providers (cost of goods, kept apart from `prices`, the tariff). */
  priceList?: PriceList;
  /**
   * What each request consumed of AWS (instrumented clients) and its function's memory: metered with the request. None:
   * not measured.
   */
  consumption?: { meter: ConsumptionMeter; memoryGb: number };
  clock: Clock;
  /**
   * A fresh id with the kind as prefix (`dec_…` for decisions, `exp_…` for experiments, `pev_…` for pool evolutions).
   */
  newId: (kind?: "dec" | "exp" | "pev" | "key") => string;
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: number;
  /** How long a body may stall, and take in all, before a 408 (default BODY_TIMEOUTS). */
  bodyTimeouts?: BodyTimeouts;
  /** Experiments one key may have queued or running (default EXPERIMENT_LIMITS.activePerKey). */
  experimentsPerKey?: number;
  /**
   * Where each request's `http.request` event goes when it ends, and what `GET /metrics` serves to admin keys (serve);
   * none: no events, no `/metrics`.
   */
  observability?: { events?: EventLogger; metrics?: MetricsSource };
  /**
   * The Rank-1 harness gateway (`serve --gateway-upstream`; the API Lambda with its GatewayConfig secret); none: its
   * routes answer 501.
   */
  gateway?: GatewaySettings;
  /** The web console's built files, served at `/console` (serve, the API Lambda); none: no console. */
  console?: ConsoleAssets;
}

/**
 * What the gateway adds to the API's deps: the model endpoint, the live episodes, what it routes and how it reads tool
 * outputs.
 */
export type GatewaySettings = Omit<GatewayDeps, keyof RouteTaskDeps> & {
  /**
   * Largest conversation accepted, in bytes (default GATEWAY_LIMITS.maxBodyBytes: conversations grow with every turn).
   */
  maxBodyBytes?: number;
};

/** How long the API serves a pool (immutable under its id) and an API key without reading the store again. */
export const API_CACHE_TTL_MS = { pools: 5 * 60_000, keys: KEY_CHANGE_SECONDS * 1000 };

/**
 * The API's pool and key stores behind read caches ({@link API_CACHE_TTL_MS}): an authorised
 * `/v1/route` request then reads only the pool's profiles. A key revoked in the store stops
 * working within the keys' TTL.
 */
export function withApiCaches<S extends { pools: PoolStore; keys: ApiKeyStore }>(stores: S, clock: Clock): S {
  return {
    ...stores,
    pools: new CachedPoolStore(stores.pools, { ttlMs: API_CACHE_TTL_MS.pools, clock }),
    keys: new CachedKeyStore(stores.keys, { ttlMs: API_CACHE_TTL_MS.keys, clock }),
  };
}
