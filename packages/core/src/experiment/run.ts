import { BudgetExceededError, HarnessSError } from "../errors.ts";
import { ProgressTicker } from "./progress-ticker.ts";
import { firstEvolutionTasks } from "./environment.ts";
import { claimJob, LeaseWriter, lookAgainWhenLapsed } from "../util/leased-job.ts";
import { Prices, chargeUsd, type CostUsage } from "../billing/cost-of-goods.ts";
import type { UsageMeter } from "../billing/usage.ts";
import { envelope } from "../messaging/envelope.ts";
import { resendAfterLease } from "../messaging/resend.ts";
import "./messages.ts"; // registers experiment.requested
import type { MessageQueue } from "../messaging/queue.ts";
import type { Policy, RolloutRunner } from "../ports.ts";
import { TrainConfig } from "../training/config.ts";
import type { Clock } from "../util/clock.ts";
import { consoleLogger, logFailure, type Logger } from "../util/logger.ts";
import { ExperimentRecord, rolloutFinished, type ExperimentStepStore, type ExperimentStore } from "./records.ts";
import {
  ExperimentConfig,
  inProcessRunners,
  runExperiment,
  type ExperimentDeps,
  type ExperimentOutcome,
  type StopReason,
} from "./run-experiment.ts";

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
  /**
   * Where a run that ended done joins this deployment's measured basis for quotes (quoting's
   * `addToQuoteBasis`), before its end is saved; none: quotes keep their basis.
   */
  quoteBasis?: (record: ExperimentRecord, unbilled: CostUsage) => Promise<void>;
}

/**
 * Every rollout of the run counted against its budget cap, and refused past it (a hard cap, so the
 * refusal can come mid-step; `runExperiment` returns it as a stopped outcome).
 */
function budgetedRunners(
  inner: NonNullable<ExperimentDeps["runnerFor"]>,
  record: ExperimentRecord,
): NonNullable<ExperimentDeps["runnerFor"]> {
  const cap = record.request.budget?.rollouts ?? Number.POSITIVE_INFINITY;
  const usd = record.request.budget?.usd;
  const tariff = record.tariff ?? Prices.parse({});
  return (policyId: string, policy: Policy, seed: number): RolloutRunner => {
    const run = inner(policyId, policy, seed);
    return (task, harness, s) => {
      if (record.usage.rollouts >= cap)
        return Promise.reject(new BudgetExceededError(`budget cap of ${cap} rollouts reached`));
      // Compute time is as of the last save (a step at most behind): the cap is checked per rollout.
      if (usd !== undefined && chargeUsd(record.usage, tariff) >= usd)
        return Promise.reject(new BudgetExceededError(`budget cap of ${usd} USD reached`));
      record.usage.rollouts++;
      return run(task, harness, s).finally(() => rolloutFinished(record));
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
  if (reason.kind === "cancelled")
    return {
      status: "cancelled",
      stopReason: "cancelled by its key",
      progress: { ...record.progress, label: "cancelled" },
    };
  return {
    status: "stopped",
    stopReason: reason.detail,
    progress: { ...record.progress, label: `stopped: ${reason.detail}` },
  };
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
  const claimed = await claimJob(deps.experiments, id, "experiment", deps.clock, leaseMs);
  if (claimed !== "duplicate") return new ExperimentRun(claimed, leaseMs, deps).execute();
  // Held by another attempt's lease (perhaps a dead one's): looked at again once it lapses.
  await lookAgainWhenLapsed(
    deps.experiments,
    id,
    deps.clock,
    resendAfterLease(deps.continueOn, {
      id,
      prefix: `experiment:${id}`,
      type: "experiment.requested",
      body: { experimentId: id },
    }),
  );
  return claimed;
}

/** One claimed attempt at a run: its record, the writes in flight, and whether its key cancelled it. */
class ExperimentRun {
  private readonly record: ExperimentRecord;
  private readonly logger: Logger;
  private readonly started: number;
  private readonly computeBefore: number;
  private readonly rolloutsBefore: number;
  private cancelled: boolean;
  private cancelCheck: Promise<void> | undefined;
  private readonly writer: LeaseWriter<ExperimentRecord>;
  /** When the attempt's usage was metered: the record's compute time stops there too. */
  private endedAt: number | undefined;

  constructor(
    claimed: ExperimentRecord,
    leaseMs: number,
    private readonly deps: CoordinatorDeps,
  ) {
    this.record = {
      ...claimed,
      attempts: claimed.attempts + 1,
      stopReason: undefined,
      error: undefined,
      errorCode: undefined,
    };
    this.logger = deps.logger ?? consoleLogger;
    this.cancelled = claimed.cancelRequested === true;
    this.started = deps.clock.now();
    this.computeBefore = this.record.usage.computeMs;
    this.rolloutsBefore = this.record.usage.rollouts;
    // Each write carries the compute time so far (to `endedAt` once the attempt's usage was metered).
    const stamp = (record: ExperimentRecord, now: number) => {
      record.usage = {
        rollouts: record.usage.rollouts,
        computeMs: this.computeBefore + (this.endedAt ?? now) - this.started,
      };
    };
    this.writer = new LeaseWriter(this.record, {
      store: deps.experiments,
      clock: deps.clock,
      leaseMs,
      snapshot: (r) => ExperimentRecord.parse(r),
      stamp,
    });
  }

  async execute(): Promise<ExperimentRecord> {
    const { record, deps } = this;
    /** The run's last write; none when it goes on later (re-queued). */
    let ending: Partial<ExperimentRecord> | undefined;
    try {
      // A run cancelled while it waited in the queue ends without preparing anything.
      const outcome: ExperimentOutcome = this.cancelled
        ? { kind: "stopped", reason: CANCELLED, remaining: 0 }
        : await this.attempt();
      if (outcome.kind === "done")
        ending = {
          status: "done",
          summary: outcome.summary,
          progress: { ...record.progress, done: record.progress.total, label: "done" },
        };
      else if (outcome.kind === "stopped")
        ending = await this.writer.settled().then(() => stoppedBy(outcome.reason, record));
      else {
        this.endedAt = deps.clock.now();
        await continueLater(record, outcome.remaining, this.save, this.writer.settled(), deps.continueOn!);
      }
    } catch (err) {
      await this.writer.settled();
      const error = err instanceof Error ? err.message : String(err);
      const errorCode = err instanceof HarnessSError ? err.code : "INTERNAL";
      ending = {
        status: "failed",
        error,
        errorCode,
        progress: { ...record.progress, label: `failed: ${error.slice(0, 160)}` },
      };
    }
    // Its usage is metered, and a done run joins the quotes' basis, before its end is written: a
    // reader that sees it ended sees what it used, and a quote asked then rests on it.
    await this.meterAttempt();
    if (!ending) return record;
    if (ending.status === "done")
      await deps
        .quoteBasis?.(record, deps.unbilled?.() ?? {})
        .catch(logFailure(this.logger, `quote basis after ${record.id}`));
    const last = ending;
    await this.end(last).catch((err: unknown) =>
      last.status === "failed"
        ? Promise.reject(err)
        : this.end({
            status: "failed",
            error: err instanceof Error ? err.message : String(err),
            errorCode: err instanceof HarnessSError ? err.code : "INTERNAL",
          }),
    );
    return record;
  }

  /**
   * What this attempt used (its rollouts, and its compute time to `endedAt`, now if unset), metered to its key and the
   * run.
   */
  private async meterAttempt(): Promise<void> {
    const { record, deps } = this;
    this.endedAt ??= deps.clock.now();
    await deps.meter?.add(
      record.keyId,
      { rollouts: record.usage.rollouts - this.rolloutsBefore, computeMs: this.endedAt - this.started },
      { jobId: record.id },
    );
  }

  /** Asks the store after each step whether the run was cancelled (one read in flight at a time). */
  private checkCancel(): void {
    this.cancelCheck ??= this.deps.experiments
      .cancelRequested(this.record.id)
      .then((c) => {
        if (c) this.cancelled = true;
      })
      .catch(logFailure(this.logger, `cancel check of ${this.record.id}`)) // asked again after the next step
      .finally(() => (this.cancelCheck = undefined));
  }

  /** Applies `patch` now and writes the whole record after every earlier write (no stale overwrite). */
  private readonly save = (patch: Partial<ExperimentRecord>): Promise<void> => this.writer.save(patch);

  /**
   * The run's last write; its key's experiment slot is given back first (a crash in between frees the slot early, never
   * leaks it).
   */
  private async end(patch: Partial<ExperimentRecord>): Promise<void> {
    await this.deps.meter
      ?.releaseSlot(this.record.keyId)
      .catch(logFailure(this.logger, `releasing ${this.record.keyId}'s experiment slot`));
    await this.save(patch);
  }

  /** One attempt at the run: prepared, then trained and evaluated from where earlier attempts stopped. */
  private async attempt(): Promise<ExperimentOutcome> {
    const { record, deps } = this;
    // What a fresh run does before its first training step, said as it happens (issue 70 item 3: never "queued" while
    // it runs): preparing its environment and pool (an evolution first, where it runs one), then evaluating H0. A
    // resumed attempt keeps its "continuing: …" label (what is left) until its next step.
    const fresh = record.baselines.length + record.results.length + record.units.length === 0;
    const ticker = new ProgressTicker(record, this.save, logFailure(this.logger, `progress write of ${record.id}`));
    try {
      if (fresh) await ticker.enter(firstEvolutionTasks(record.request.env) === undefined ? "preparing" : "evolving");
      const base = await deps.prepare(record);
      if (fresh) await ticker.enter("evaluating");
      return await this.train(base, ticker);
    } finally {
      ticker.stop();
    }
  }

  /** The attempt's training and evaluation on its prepared setup, from where earlier attempts stopped. */
  private train(
    base: Awaited<ReturnType<CoordinatorDeps["prepare"]>>,
    ticker: ProgressTicker,
  ): Promise<ExperimentOutcome> {
    const { record, deps } = this;
    const config = configOf(record);
    let done = record.results.length * config.train.steps + record.units.reduce((n, u) => n + u.state.step, 0);
    const otherUnits = (arm: string, seed: number) => record.units.filter((u) => u.arm !== arm || u.seed !== seed);
    return runExperiment(config, {
      ...base,
      runnerFor: budgetedRunners(base.runnerFor ?? inProcessRunners(base.env), record),
      shouldStop: () => (this.cancelled ? CANCELLED : undefined),
      resume: { baselines: [...record.baselines], results: [...record.results], units: [...record.units] },
      onSeedBaseline: (b) => this.save({ baselines: [...record.baselines, b] }),
      ...(deps.sliceMs !== undefined && deps.continueOn
        ? { shouldYield: () => deps.clock.now() - this.started >= deps.sliceMs! }
        : {}),
      onProgress: (e) => {
        done++;
        this.checkCancel();
        void deps.steps
          ?.put({ experimentId: record.id, seed: e.seed, arm: e.arm, ...e.record })
          .catch(logFailure(this.logger, `step record ${record.id} ${e.arm}/${e.seed} step ${e.step}`));
        // A missed progress write is superseded by the next one.
        void ticker
          .enter("training", `seed ${e.seed} ${e.arm} step ${e.step}/${e.steps}`, { done })
          .catch(logFailure(this.logger, `progress write of ${record.id}`));
      },
      onUnitStep: (cp) => this.save({ units: [...otherUnits(cp.arm, cp.seed), cp] }),
      onArmSeed: (arm, result) =>
        this.save({ results: [...record.results, { arm, result }], units: otherUnits(arm, result.seed) }),
    });
  }
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
  await save({
    status: "queued",
    progress: { ...record.progress, label: `continuing: ${remaining} (arm, seed) units left${part}` },
  });
  // Saved first: if this send fails the delivery is retried and the queued run is claimed again.
  await queue.send([
    envelope(
      "experiment.requested",
      `experiment:${record.id}:after-attempt-${record.attempts}`,
      { experimentId: record.id },
      { keyId: record.keyId, jobId: record.id },
    ),
  ]);
}
