import { ConcurrencyLimitError, NotFoundError } from "../errors.ts";
import { admitExperiment, type AdmitExperimentDeps, type ExperimentOffers } from "./admit.ts";
import { ownedBy } from "../access/keys.ts";
import type { Quote } from "../billing/quote-schema.ts";
import { jobBill, type PriceList, type Prices } from "../billing/cost-of-goods.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";
import { envelope } from "../messaging/envelope.ts";
import "./messages.ts"; // registers experiment.requested
import type { MessageQueue } from "../messaging/queue.ts";
import { TrainConfig } from "../training/config.ts";
import type { Clock } from "../util/clock.ts";
import {
  type ExperimentRecord,
  TERMINAL_STATES,
  experimentCost,
  type ExperimentPlan,
  type ExperimentStore,
} from "./records.ts";

/** What starting an experiment needs; with `price`, the run is quoted first and refused (402) above a budget. */
export interface StartExperimentDeps extends Omit<AdmitExperimentDeps, "offers"> {
  experiments: ExperimentStore;
  coordinator: MessageQueue;
  clock: Clock;
  newId: () => string;
  slots?: { meter: UsageMeter; limit: number };
  /**
   * Prices the run (quoting's `budgetedPricer`: its quote, refused with a 402 above the run's or
   * its key's USD budget) and answers the quote with the tariff it was priced at; none: unpriced.
   */
  price?: (req: ExperimentPlan) => Promise<{ quote: Quote; tariff: Prices }>;
  /**
   * What this deployment runs experiments on: the families by name, whether a caller's own environment, and the base
   * models it serves (default: the embedded suite with its own policy only).
   */
  offers?: ExperimentOffers;
}

/**
 * Admits ({@link admitExperiment}: the checks a quote of it passes too) and records an experiment,
 * then asks the coordinator to run it. With `price`, it is
 * quoted first: a quote above the run's or the key's USD budget is a {@link BudgetExceededError}
 * (402) and nothing is recorded; the quote and the tariff are kept in the record. With `slots`,
 * the key must hold one of its `limit` experiment slots first ({@link ConcurrencyLimitError} when
 * all are taken); the coordinator gives it back when the run ends.
 *
 * @example
 * const rec = await startExperiment(ExperimentRequest.parse({ seeds: [1], budget: { rollouts: 5000 } }), "key1", deps);
 */
export async function startExperiment(
  req: ExperimentPlan,
  keyId: string,
  deps: StartExperimentDeps,
): Promise<ExperimentRecord> {
  await admitExperiment(req, keyId, deps);
  const train = TrainConfig.parse(req.train);
  const priced = deps.price ? await deps.price(req) : {};
  if (deps.slots && !(await deps.slots.meter.acquireSlot(keyId, deps.slots.limit)))
    throw new ConcurrencyLimitError(deps.slots.limit);
  try {
    return await recordAndQueue(req, train.steps, keyId, deps, priced);
  } catch (err) {
    await deps.slots?.meter.releaseSlot(keyId);
    throw err;
  }
}

async function recordAndQueue(
  req: ExperimentPlan,
  steps: number,
  keyId: string,
  deps: { experiments: ExperimentStore; coordinator: MessageQueue; clock: Clock; newId: () => string },
  priced: Pick<ExperimentRecord, "quote" | "tariff">,
) {
  const now = deps.clock.now();
  const record: ExperimentRecord = {
    id: deps.newId(),
    keyId,
    request: req,
    status: "queued",
    createdAt: now,
    updatedAt: now,
    attempts: 0,
    progress: { done: 0, total: req.seeds.length * req.arms.length * steps, label: "queued" },
    usage: { rollouts: 0, computeMs: 0 },
    results: [],
    baselines: [],
    units: [],
    ...priced,
  };
  await deps.experiments.create(record);
  await deps.coordinator.send([
    envelope(
      "experiment.requested",
      `experiment:${record.id}`,
      { experimentId: record.id },
      { keyId, jobId: record.id },
    ),
  ]);
  return record;
}

/**
 * `POST /v1/experiments/{id}/cancel`: a queued run ends `cancelled` at once (and gives its slot
 * back); a running one stops after its current training step; an ended one is left as it is.
 * Another key's run is "not found".
 */
export async function cancelExperiment(
  id: string,
  key: { id: string; scopes: readonly string[] },
  deps: { experiments: ExperimentStore; clock: Clock; meter?: UsageMeter },
): Promise<ExperimentRecord> {
  const before = await ownedBy(deps.experiments, key, "experiment").get(id);
  if (TERMINAL_STATES.includes(before.status)) return before;
  const after = await deps.experiments.requestCancel(id, deps.clock.now());
  if (!after) throw new NotFoundError("experiment", id);
  if (before.status !== "cancelled" && after.status === "cancelled") await deps.meter?.releaseSlot(after.keyId);
  return after;
}

/** What `GET /v1/experiments/{id}` answers: state, progress, usage and cost so far. */
export function experimentStatus(
  record: ExperimentRecord,
  prices: Prices,
  actual?: { usage: Usage; priceList: PriceList },
) {
  return {
    id: record.id,
    status: record.status,
    request: record.request,
    progress: record.progress,
    attempts: record.attempts,
    cost: experimentCost(record.usage, prices),
    budget: record.request.budget ?? null,
    /** What the run was quoted, and (with `actual`) what it used and cost so far: side by side. */
    quote: record.quote ?? null,
    actual: actual ? jobBill(actual.usage, record.tariff ?? prices, actual.priceList) : null,
    stopReason: record.stopReason ?? null,
    error: record.error ?? null,
    errorCode: record.errorCode ?? null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
