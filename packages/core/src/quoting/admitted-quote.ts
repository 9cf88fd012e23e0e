import { admitExperiment, type AdmitExperimentDeps } from "../experiment/admit.ts";
import { admitEvolution } from "../pools/start-evolution.ts";
import { poolsVisibleTo } from "../pools/visibility.ts";
import { admitRescue } from "../rescue/jobs.ts";
import type { CallerPolicies } from "../dispatch/rollout-source.ts";
import type { TaskSource } from "../task-source.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import { quoteRequest, type QuotingDeps } from "./budgets.ts";
import type { Quote } from "../billing/quote-schema.ts";
import type { QuoteRequest } from "./quotes.ts";

/** What a quote's admission reads: the deployment's offers, callers' policies, pools and tasks. */
export type QuoteAdmissionDeps = AdmitExperimentDeps & {
  pools: PoolStore;
  tasks: TaskSource;
  callers?: CallerPolicies;
  newId: () => string;
};
type Key = { id: string; scopes: readonly string[] };

/** Each kind of request a quote prices, admitted by the checks its own start applies (one rule for both). */
const ADMISSIONS: {
  [K in keyof UnionKeys]: (req: UnionKeys[K], key: Key, deps: QuoteAdmissionDeps) => Promise<unknown>;
} = {
  experiment: (req, key, deps) => admitExperiment(req, key.id, deps),
  rescue: (req, key, deps) => admitRescue(req, key.id, { ...deps, pools: poolsVisibleTo(deps.pools, key) }),
  pool: (req, key, deps) => admitEvolution(req, key.id, deps),
};
type UnionKeys = {
  experiment: Extract<QuoteRequest, { experiment: unknown }>["experiment"];
  rescue: Extract<QuoteRequest, { rescue: unknown }>["rescue"];
  pool: Extract<QuoteRequest, { pool: unknown }>["pool"];
};

/**
 * `POST /v1/quotes`: the request is admitted as its own start would admit it (an environment or
 * model not offered, a refused URL, another key's pool: the same 400 or 404, nothing priced), then
 * quoted. A quote is never a price for what the service would refuse to run.
 */
export async function quoteAdmitted(
  req: QuoteRequest,
  key: Key,
  deps: QuoteAdmissionDeps & QuotingDeps,
): Promise<Quote> {
  const [kind, body] = Object.entries(req)[0] as [keyof UnionKeys, never];
  await ADMISSIONS[kind](body, key, deps);
  return quoteRequest(req, deps);
}
