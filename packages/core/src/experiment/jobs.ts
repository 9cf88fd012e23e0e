import { BudgetExceededError, NotFoundError, parseOrThrow } from "../errors.ts";
import { ExperimentConfig, inProcessRunners, runExperiment, type ExperimentDeps, type ExperimentOutcome, type StopReason } from "./run-experiment.ts";
import { ExperimentRecord, TERMINAL_STATES, experimentCost, type ExperimentPlan, type ExperimentStepStore, type ExperimentStore } from "./records.ts";
import { ensureWithinBudget, quoteRequest, type QuotingDeps } from "../billing/budgets.ts";
import { Prices, chargeUsd, costOfGoods, type CostUsage, type PriceList } from "../billing/cost-of-goods.ts";
import { mergeUsage } from "../billing/metering.ts";
import { addJobToFit } from "../billing/quote-fit.ts";
import { QUOTE_BASIS_KEY, QUOTE_RESCUE_KEYS, rescueRolloutsOf } from "../billing/quotes.ts";
import { ConcurrencyLimitError } from "../errors.ts";
import { visibleTo } from "../access/keys.ts";
import { zeroUsage } from "../billing/usage.ts";
import { envelope } from "../messaging/envelope.ts";
import type { Policy, RolloutRunner } from "../ports.ts";
import { TrainConfig } from "../training/config.ts";
import type { Clock } from "../util/clock.ts";
import { consoleLogger, logFailure, type Logger } from "../util/logger.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";

/** What starting an experiment needs; with `quoting`, the run is quoted first and refused (402) above a budget. */
export interface StartExperimentDeps {
  experiments: ExperimentStore;
  coordinator: MessageQueue;
  clock: Clock;
  newId: () => string;
  slots?: { meter: UsageMeter; limit: number };
  quoting?: QuotingDeps & { keyBudgetUsd?: number };
}

/**
 * Validates and records an experiment, then asks the coordinator to run it. With `quoting`, it is
 * quoted first: a quote above the run's or the key's USD budget is a {@link BudgetExceededError}
 * (402) and nothing is recorded; the quote and the tariff are kept in the record. With `slots`,
 * the key must hold one of its `limit` experiment slots first ({@link ConcurrencyLimitError} when
 * all are taken); the coordinator gives it back when the run ends.
 *
 * @example
 * const rec = await startExperiment(ExperimentRequest.parse({ seeds: [1], budget: { rollouts: 5000 } }), "key1", deps);
 */
export async function startExperiment(req: ExperimentPlan, keyId: string, deps: StartExperimentDeps): Promise<ExperimentRecord> {
  const train = parseOrThrow(TrainConfig, req.train, "train");
  const quoted = deps.quoting ? await quoteRequest({ experiment: req }, deps.quoting) : undefined;
  if (quoted)
    await ensureWithinBudget(quoted, { id: keyId, ...(deps.quoting?.keyBudgetUsd !== undefined ? { budgetUsd: deps.quoting.keyBudgetUsd } : {}) }, req.budget?.usd, deps.quoting!);
  const priced = quoted ? { quote: quoted, tariff: deps.quoting!.tariff } : {};
  if (deps.slots && !(await deps.slots.meter.acquireSlot(keyId, deps.slots.limit))) throw new ConcurrencyLimitError(deps.slots.limit);
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
  await deps.coordinator.send([envelope("experiment.requested", `experiment:${record.id}`, { experimentId: record.id }, { keyId, jobId: record.id })]);
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
  const before = await deps.experiments.get(id);
  if (!before || !visibleTo(before.keyId, key)) throw new NotFoundError("experiment", id);
  if (TERMINAL_STATES.includes(before.status)) return before;
  const after = await deps.experiments.requestCancel(id, deps.clock.now());
  if (!after) throw new NotFoundError("experiment", id);
  if (before.status !== "cancelled" && after.status === "cancelled") await deps.meter?.releaseSlot(after.keyId);
  return after;
}

export interface CoordinatorDeps {
  experiments: ExperimentStore;
  clock: Clock;
  /** The run's environment, policies, voters and instances, and how its rollouts are dispatched. */
  prepare: (record: ExperimentRecord) => Promise<ExperimentDeps>;
  leaseMs?: number;
  /** Bills the key that started the run for what each attempt consumed. */
  meter?: UsageMeter;
  /** Where each training step's record goes (runs → steps → groups). */
  steps?: ExperimentStepStore;
  /**
   * Longest an attempt starts new (arm, seed) units for; then it saves what it finished, re-queues
   * the run on `continueOn` and ends, so a run can outlast one worker invocation (Lambda: 15 min).
   * A unit whose policy outlives the attempt (`prepare` gives `policies`) may also pause between
   * two training steps; otherwise a single unit must fit in what is left of the invocation.
   */
  sliceMs?: number;
  continueOn?: MessageQueue;
  /** Where failed writes that do not stop the run are reported (default: stderr). */
  logger?: Logger;
  /**
   * What this attempt consumed that is not billed yet (the coordinator's own AWS calls bill when
   * its invocation ends, after the run finished): counted in the quote basis with the job's usage.
   */
  unbilled?: () => CostUsage;
}

/**
 * Every rollout of the run counted against its budget cap, and refused past it (a hard cap, so the
 * refusal can come mid-step; `runExperiment` returns it as a stopped outcome).
 */
function budgetedRunners(inner: NonNullable<ExperimentDeps["runnerFor"]>, record: ExperimentRecord): NonNullable<ExperimentDeps["runnerFor"]> {
  const cap = record.request.budget?.rollouts ?? Number.POSITIVE_INFINITY;
  const usd = record.request.budget?.usd;
  const tariff = record.tariff ?? Prices.parse({});
  return (policyId: string, policy: Policy, seed: number): RolloutRunner => {
    const run = inner(policyId, policy, seed);
    return (task, harness, s) => {
      if (record.usage.rollouts >= cap) return Promise.reject(new BudgetExceededError(`budget cap of ${cap} rollouts reached`));
      // Compute time is as of the last save (a step at most behind): the cap is checked per rollout.
      if (usd !== undefined && chargeUsd(record.usage, tariff) >= usd) return Promise.reject(new BudgetExceededError(`budget cap of ${usd} USD reached`));
      record.usage.rollouts++;
      return run(task, harness, s);
    };
  };
}

/** The run's configuration, as its request gave it. */
function configOf(record: ExperimentRecord): ExperimentConfig {
  return ExperimentConfig.parse({
    seeds: record.request.seeds,
    arms: record.request.arms,
    train: TrainConfig.parse(record.request.train),
    evalSamples: record.request.evalSamples,
    evalTasks: record.request.evalTasks,
    protocol: record.request.protocol,
  });
}

/** The last write of a run that stopped: cancelled by its key, or at its budget cap. */
function stoppedBy(reason: StopReason, record: ExperimentRecord): Partial<ExperimentRecord> {
  if (reason.kind === "cancelled") return { status: "cancelled", stopReason: "cancelled by its key", progress: { ...record.progress, label: "cancelled" } };
  return { status: "stopped", stopReason: reason.detail };
}

const CANCELLED: StopReason = { kind: "cancelled", detail: "cancelled by its key" };

/**
 * The coordinator use-case: claims the run (a duplicate delivery while it runs is a no-op), runs
 * every arm and seed, saves progress and each finished (arm, seed) as it goes, and stops cleanly
 * when the next rollout would pass the budget cap (`stopped`, partial results kept). An attempt
 * resumes after the units earlier attempts finished (a crashed worker's run, taken over after its
 * lease, or a run continued after its time slice) and gives the same summary as one long attempt.
 */
export async function runExperimentJob(id: string, deps: CoordinatorDeps): Promise<ExperimentRecord | "duplicate"> {
  const leaseMs = deps.leaseMs ?? 120_000;
  const claimed = await deps.experiments.claim(id, deps.clock.now(), deps.clock.now() + leaseMs);
  if (!claimed) {
    if (!(await deps.experiments.get(id))) throw new NotFoundError("experiment", id);
    return "duplicate";
  }
  const record: ExperimentRecord = { ...claimed, attempts: claimed.attempts + 1, stopReason: undefined, error: undefined };
  const logger = deps.logger ?? consoleLogger;
  let cancelled = claimed.cancelRequested === true;
  let cancelCheck: Promise<void> | undefined;
  /** Asks the store after each step whether the run was cancelled (one read in flight at a time). */
  const checkCancel = () => {
    cancelCheck ??= deps.experiments
      .cancelRequested(id)
      .then((c) => {
        if (c) cancelled = true;
      })
      .catch(logFailure(logger, `cancel check of ${id}`)) // asked again after the next step
      .finally(() => (cancelCheck = undefined));
  };
  const started = deps.clock.now();
  const computeBefore = record.usage.computeMs;
  const rolloutsBefore = record.usage.rollouts;
  let persisted: Promise<void> = Promise.resolve();
  /** Applies `patch` now and writes the whole record after every earlier write (no stale overwrite). */
  const save = (patch: Partial<ExperimentRecord>) => {
    Object.assign(record, patch, { updatedAt: deps.clock.now(), usage: { rollouts: record.usage.rollouts, computeMs: computeBefore + deps.clock.now() - started } });
    record.leaseUntil = record.status === "running" ? deps.clock.now() + leaseMs : undefined;
    const snapshot = ExperimentRecord.parse(record);
    persisted = persisted.catch(() => undefined).then(() => deps.experiments.save(snapshot));
    return persisted;
  };
  /** The run's last write; its key's experiment slot is given back first (a crash in between frees the slot early, never leaks it). */
  const end = async (patch: Partial<ExperimentRecord>) => {
    await deps.meter?.releaseSlot(record.keyId).catch(logFailure(logger, `releasing ${record.keyId}'s experiment slot`));
    await save(patch);
  };
  /** One attempt at the run: prepared, then trained and evaluated from where earlier attempts stopped. */
  const attempt = async (): Promise<ExperimentOutcome> => {
    const base = await deps.prepare(record);
    const config = configOf(record);
    let done = record.results.length * config.train.steps + record.units.reduce((n, u) => n + u.state.step, 0);
    const otherUnits = (arm: string, seed: number) => record.units.filter((u) => u.arm !== arm || u.seed !== seed);
    return runExperiment(config, {
      ...base,
      runnerFor: budgetedRunners(base.runnerFor ?? inProcessRunners(base.env), record),
      shouldStop: () => (cancelled ? CANCELLED : undefined),
      resume: { baselines: [...record.baselines], results: [...record.results], units: [...record.units] },
      onSeedBaseline: (b) => save({ baselines: [...record.baselines, b] }),
      ...(deps.sliceMs !== undefined && deps.continueOn ? { shouldYield: () => deps.clock.now() - started >= deps.sliceMs! } : {}),
      onProgress: (e) => {
        done++;
        checkCancel();
        void deps.steps
          ?.put({ experimentId: record.id, seed: e.seed, arm: e.arm, ...e.record })
          .catch(logFailure(logger, `step record ${record.id} ${e.arm}/${e.seed} step ${e.step}`));
        // A missed progress write is superseded by the next one.
        void save({ progress: { done, total: record.progress.total, label: `seed ${e.seed} ${e.arm} step ${e.step}/${e.steps}` } }).catch(
          logFailure(logger, `progress write of ${record.id}`),
        );
      },
      onUnitStep: (cp) => save({ units: [...otherUnits(cp.arm, cp.seed), cp] }),
      onArmSeed: (arm, result) => save({ results: [...record.results, { arm, result }], units: otherUnits(arm, result.seed) }),
    });
  };
  try {
    // A run cancelled while it waited in the queue ends without preparing anything.
    const outcome: ExperimentOutcome = cancelled ? { kind: "stopped", reason: CANCELLED, remaining: 0 } : await attempt();
    if (outcome.kind === "done") await end({ status: "done", summary: outcome.summary, progress: { ...record.progress, done: record.progress.total, label: "done" } });
    else if (outcome.kind === "stopped") await persisted.catch(() => undefined).then(() => end(stoppedBy(outcome.reason, record)));
    else await continueLater(record, outcome.remaining, save, persisted, deps.continueOn!);
  } catch (err) {
    await persisted.catch(() => undefined);
    await end({ status: "failed", error: err instanceof Error ? err.message : String(err) });
  }
  await deps.meter?.add(record.keyId, { rollouts: record.usage.rollouts - rolloutsBefore, computeMs: record.usage.computeMs - computeBefore }, { jobId: record.id });
  if (record.status === "done" && deps.meter) await addToQuoteBasis(record, deps.meter, deps.unbilled?.() ?? {}).catch(logFailure(logger, `quote basis after ${record.id}`));
  return record;
}

/**
 * A finished run's actual usage (with what its last attempt has not billed yet) and rescue
 * rollouts join this deployment's measured basis for quotes (`requests` counts the jobs).
 */
async function addToQuoteBasis(record: ExperimentRecord, meter: UsageMeter, unbilled: CostUsage): Promise<void> {
  const used = { ...zeroUsage, ...mergeUsage(await meter.job(record.id), unbilled) };
  await meter.add(QUOTE_BASIS_KEY, { ...used, requests: 1 });
  const rescue = rescueRolloutsOf(record.results);
  await addJobToFit(meter, used, rescue.extra);
  if (rescue.training > 0)
    await Promise.all([meter.add(QUOTE_RESCUE_KEYS.training, { rollouts: rescue.training }), meter.add(QUOTE_RESCUE_KEYS.extra, { rollouts: rescue.extra })]);
}

/** A paused attempt: the record saved as queued with what is left, then the run re-queued. */
async function continueLater(
  record: ExperimentRecord,
  remaining: number,
  save: (patch: Partial<ExperimentRecord>) => Promise<void>,
  persisted: Promise<void>,
  queue: MessageQueue,
): Promise<void> {
  await persisted.catch(() => undefined); // the save below writes the whole record again
  const part = record.units.map((u) => `, ${u.arm}/${u.seed} paused after step ${u.state.step}`).join("");
  await save({ status: "queued", progress: { ...record.progress, label: `continuing: ${remaining} (arm, seed) units left${part}` } });
  // Saved first: if this send fails the delivery is retried and the queued run is claimed again.
  await queue.send([
    envelope("experiment.requested", `experiment:${record.id}:after-attempt-${record.attempts}`, { experimentId: record.id }, { keyId: record.keyId, jobId: record.id }),
  ]);
}

/** What `GET /v1/experiments/{id}` answers: state, progress, usage and cost so far. */
export function experimentStatus(record: ExperimentRecord, prices: Prices, actual?: { usage: Usage; priceList: PriceList }) {
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
    actual: actual ? { usage: actual.usage, costOfGoods: costOfGoods(actual.usage, actual.priceList), chargeUsd: chargeUsd(actual.usage, record.tariff ?? prices) } : null,
    stopReason: record.stopReason ?? null,
    error: record.error ?? null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
