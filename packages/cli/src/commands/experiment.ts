import { writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import {
  ExperimentConfig,
  ExperimentSummary,
  evalSet,
  runExperimentToEnd,
  type ExperimentDeps,
} from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { ValidationError, parseOrThrow } from "@harness-s/core";
import { defaultEmbeddedSettings, type EmbeddedSettings } from "@harness-s/envs";
import type { PanelRouting } from "@harness-s/adapters/llm";
import { prepareOutDir } from "../out-dir.ts";
import { readPanelFile } from "../panel-file.ts";
import { openCheckpoint } from "../checkpoint.ts";
import { createProgress } from "../progress.ts";
import { runExperimentLocalAws } from "../runtime/local-aws.ts";
import { renderReport } from "../report/markdown.ts";
import { printTable, writePlots } from "../report/output.ts";
import { SWEEP_CUE_RATES, SWEEP_CUE_STRENGTHS, runSweep, type SweepResult } from "../sweep.ts";
import { workerPolicySetup, type WorkerDeps, type WorkerPolicyOptions } from "@harness-s/functions/experiment-setup";
import { renderingOf, type OpenRequest, type OpenedFamily } from "@harness-s/envs";
import { familyFor } from "../families.ts";
import { cliIo } from "../family-io.ts";
import { startPolicyWorker } from "../policy-worker.ts";
import { startTableSection } from "../suite-lm/compare.ts";
import { sameModel, savedProfiles, startTableOnce, stepPace } from "../suite-lm/token-run.ts";
import { ensureSuiteLm, type SuiteLmRecipe } from "../suite-lm/suite-lm.ts";
import { presetOf } from "../declared/experiment-presets.ts";
import { runPairedSweep, sweepFile, type PairedSweep, type SweepKind } from "../sweeps.ts";

/** The sweeps `--sweep` runs: the cue sweep (harness-s − grpo-budget), the router's, re-anchoring's. */
export type SweepName = "cue" | SweepKind;

export interface ExperimentOptions {
  seeds: number[];
  /** The arms to run (default: all six). */
  arms?: readonly string[];
  out: string;
  quick: boolean;
  /** Sweeps to run after the experiment (none by default). */
  sweeps: readonly SweepName[];
  steps?: number;
  train?: Record<string, unknown>;
  cueRate: number;
  cueStrength: number;
  fixedSuite: boolean;
  /** Suite side effects, the policy's hint half-life and the pool size (see `EmbeddedSettings`). */
  sideEffects?: number;
  cueHalfLife?: number;
  poolSize?: number;
  /** test (default) or validation: see `SuiteOptions.protocol`. */
  protocol?: "test" | "validation";
  /** in-process (default) or local-aws: through DynamoDB Local, fauxqs and the Lambda handlers. */
  runtime: "in-process" | "local-aws";
  /** Continue the run whose checkpoint.json is in `out` (in-process only). */
  resume?: boolean;
  /** Train a policy at a protocol-v2 worker instead of the embedded one. */
  worker?: WorkerPolicyOptions;
  /**
   * Start that worker here (on `<out>/worker`, so `--resume` restores its unit policies): the
   * tiny model, a model directory, or the suite LM built (or found) from `recipe` in `cacheDir`.
   */
  startWorker?: { model: string; recipe: SuiteLmRecipe; cacheDir: string };
  /** Evaluate at most this many tasks per split (a slow policy's smoke run). */
  evalTasks?: number;
  /** Attempts per task in every evaluation (default: the preset's). */
  evalSamples?: number;
  /** Rollouts per seed for measuring the pool's initial profiles with a worker's policy (default: all of dev). */
  profileBudget?: number;
  /**
   * A voter panel file: the router arms decide with its voters, weights and quorum (default: the statistical voters).
   */
  voters?: string;
  /** The benchmark family to train on (a registered one: embedded, dbbench, appworld, swe-gym, …). */
  env: string;
  /** The command's flags, where the family reads its own (DBBench's engine and pool, AppWorld's servers, …). */
  familyOptions?: Readonly<Record<string, unknown>>;
}

/** The run's config: the preset's (`--quick`: fewer steps and evaluation samples) under the explicit settings. */
export function experimentConfig(opts: ExperimentOptions): ExperimentConfig {
  const train = parseOrThrow(
    TrainConfig,
    { ...presetOf(opts.quick).train, ...opts.train, ...(opts.steps !== undefined ? { steps: opts.steps } : {}) },
    "training config",
  );
  return parseOrThrow(
    ExperimentConfig,
    {
      seeds: opts.seeds,
      ...(opts.arms ? { arms: opts.arms } : {}),
      train,
      evalSamples: opts.evalSamples ?? presetOf(opts.quick).evalSamples,
      protocol: opts.protocol ?? "test",
      ...(opts.evalTasks ? { evalTasks: opts.evalTasks } : {}),
    },
    "experiment config",
  );
}

/**
 * Runs the experiment, first starting its policy worker when `startWorker` asks (stopped at the end, whatever happens).
 */
export async function experimentCommand(opts: ExperimentOptions): Promise<ExperimentSummary> {
  // Read before the worker starts: a bad panel file is an error before any work.
  const panel = opts.voters ? await readPanelFile(opts.voters) : undefined;
  await prepareOutDir(opts.out);
  if (!opts.startWorker) return runExperimentCommand(opts, false, panel);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const { model, recipe, cacheDir } = opts.startWorker;
  const lm = model === "suite-lm" ? await ensureSuiteLm(recipe, cacheDir, log) : undefined;
  if (lm && opts.resume) await sameModel(join(opts.out, "suite-lm.json"), lm.weights_sha256);
  const path = lm?.path ?? model;
  const worker = await startPolicyWorker({ model: path, stateDir: join(opts.out, "worker") }, log);
  try {
    const name = lm?.name ?? (model === "tiny" ? "tiny" : basename(model));
    if (lm) await writeFile(join(opts.out, "suite-lm.json"), JSON.stringify(lm, null, 2));
    return await runExperimentCommand(
      { ...opts, worker: { ...opts.worker!, url: worker.url, model: name }, startWorker: undefined },
      lm !== undefined,
      panel,
    );
  } finally {
    await worker.stop();
  }
}

/** The suite settings of the run (the embedded suite reads them; they key its checkpoint whatever the family). */
function suiteOf(opts: ExperimentOptions, protocol: ExperimentConfig["protocol"]) {
  return {
    cueRate: opts.cueRate,
    cueStrength: opts.cueStrength,
    fixedSuite: opts.fixedSuite,
    protocol,
    ...(opts.sideEffects ? { sideEffects: opts.sideEffects } : {}),
    ...(opts.cueHalfLife ? { cueHalfLife: opts.cueHalfLife } : {}),
    ...(opts.poolSize ? { poolSize: opts.poolSize } : {}),
  };
}

/**
 * Runs the experiment in process or on the local stack on the family of `opts.env`, with the
 * family's own policy or a worker's (`experimentCommand` starts that worker first when asked).
 */
async function runExperimentCommand(
  opts: ExperimentOptions,
  compareAtStart = false,
  panel?: PanelRouting,
): Promise<ExperimentSummary> {
  const started = Date.now();
  const config = experimentConfig(opts);
  const runDir = opts.out;
  process.stderr.write(
    `harness-s experiment: ${config.seeds.length} seeds × ${config.arms.length} arms × ${config.train.steps} steps → ${runDir}\n`,
  );
  const family = familyFor(opts.env, "experiment");
  const suite = suiteOf(opts, config.protocol);
  const request = { command: "experiment", options: opts.familyOptions ?? {} } as const;
  const runKey = { config, suite, ...family.runKey?.(request) };
  const checkpoint = await runCheckpoint(opts, runDir, runKey);
  const bar = createProgress(config.seeds.length * config.arms.length * config.train.steps, "training");
  let done = resumedSteps(checkpoint, config);
  // With --policy worker on the local stack, the coordinator registers each unit's token policy in process and dispatch
  // samples it at the worker, as serve's runs do.
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const open: OpenRequest = {
    ...request,
    protocol: config.protocol,
    suite,
    onEvolution: (seed, d, t) => bar.update(done, `seed ${seed}: evolving its sibling pool (${d}/${t})`),
    io: cliIo(log),
  };
  const opened = await family.open(open);
  try {
    const source = opened.base;
    const deps = runDeps(opts, source, runDir, family, panel);
    // The start table compares the family's own policy with the worker's at step 0.
    const startRows =
      compareAtStart && family.policy === "own"
        ? await startTableOnce(join(runDir, "start-table.json"), source, deps, config)
        : undefined;
    const pace = stepPace(deps.sampled);
    const summary =
      opts.runtime === "local-aws"
        ? await runExperimentLocalAws(config, deps, (d, label) => bar.update(d, label), log, panel ? { panel } : {})
        : await runExperimentToEnd(config, {
            ...deps,
            onProgress: (e) => bar.update(++done, `seed ${e.seed} ${e.arm} step ${e.step}/${e.steps}${pace()}`),
            resume: checkpoint!.state,
            onSeedBaseline: checkpoint!.addBaseline,
            onArmSeed: checkpoint!.addResult,
            onUnitStep: checkpoint!.saveUnit,
          });
    bar.stop();
    const poolsFile = await writePools(runDir, config, deps);
    ExperimentSummary.parse(summary);
    const { sweep, pairedSweeps } = await runSweeps(opts.sweeps, runDir, config, {
      ...defaultEmbeddedSettings,
      ...suite,
    });
    await writeFile(join(runDir, "summary.json"), JSON.stringify(summary, null, 2));
    const section = await familySection(opened, summary, checkpoint, config, deps);
    await writeFile(
      join(runDir, "report.md"),
      renderReport(summary, sweep, { pools: poolsFile, pairedSweeps }) + startTableSection(startRows) + section,
    );
    await writePlots(runDir, summary, sweep, pairedSweeps);
    printTable(summary, (Date.now() - started) / 1000, runDir);
    return summary;
  } finally {
    await opened.stop();
  }
}

/**
 * The run's checkpoint (in process only; `--resume` continues the one in `runDir`): a usage error when `--resume`
 * asks for one the runtime does not keep.
 */
async function runCheckpoint(opts: ExperimentOptions, runDir: string, runKey: Record<string, unknown>) {
  const checkpoint =
    opts.runtime === "in-process"
      ? await openCheckpoint(join(runDir, "checkpoint.json"), runKey, opts.resume ?? false)
      : undefined;
  if (opts.resume && !checkpoint)
    throw new ValidationError("--resume", ["only the in-process runtime keeps a checkpoint"]);
  return checkpoint;
}

/** The training steps a resumed run has already done (its finished units' and its unfinished ones'), told on stderr. */
function resumedSteps(checkpoint: Awaited<ReturnType<typeof openCheckpoint>> | undefined, config: ExperimentConfig) {
  let done = (checkpoint?.state.results.length ?? 0) * config.train.steps;
  if (checkpoint?.state.units.length) done += checkpoint.state.units.reduce((n, u) => n + u.state.step, 0);
  if (done)
    process.stderr.write(
      `resuming: ${checkpoint!.state.results.length} (arm, seed) units already finished${checkpoint!.state.units.map((u) => `, ${u.arm}/${u.seed} after step ${u.state.step}`).join("")}\n`,
    );
  return done;
}

/** What the arms run with: the family's own policy or a worker's, and the panel's voters when there is a panel. */
function runDeps(
  opts: ExperimentOptions,
  source: OpenedFamily["base"],
  runDir: string,
  family: ReturnType<typeof familyFor>,
  panel: PanelRouting | undefined,
) {
  const base: Omit<ExperimentDeps, "onProgress"> & Partial<Pick<WorkerDeps, "sampled">> = opts.worker
    ? workerPolicySetup(
        source,
        {
          ...opts.worker,
          profiles: { ...savedProfiles(join(runDir, "token-profiles.json")), budget: opts.profileBudget },
        },
        renderingOf(family),
      )
    : source;
  // A panel's voters cost tokens: each rescue is routed once (no speculative second routing).
  return panel ? { ...base, voters: panel.voters, panel, speculateRescues: false } : base;
}

/** The section the family ends the report with (none: empty), from the summary and the first seed's held-out tasks. */
async function familySection(
  opened: OpenedFamily,
  summary: ExperimentSummary,
  checkpoint: Awaited<ReturnType<typeof openCheckpoint>> | undefined,
  config: ExperimentConfig,
  deps: Pick<ExperimentDeps, "instance">,
): Promise<string> {
  return opened.reportSection
    ? opened.reportSection(
        summary,
        checkpoint!.state.baselines,
        evalSet(config, (await deps.instance(config.seeds[0]!)).heldout),
      )
    : "";
}

/** Each seed's frozen pool (with its harm record) in `pools.json`. */
async function writePools(runDir: string, config: ExperimentConfig, deps: Pick<ExperimentDeps, "instance">) {
  const pools = await Promise.all(
    config.seeds.map(async (seed) => {
      const { pool, harm } = (await deps.instance(seed)).evolution;
      return [seed, { ...pool, harm }] as const;
    }),
  );
  const poolsFile = Object.fromEntries(pools);
  await writeFile(join(runDir, "pools.json"), JSON.stringify(poolsFile, null, 2));
  return poolsFile;
}

/** The sweeps asked for, each written beside the summary as it finishes. */
async function runSweeps(
  sweeps: readonly string[],
  runDir: string,
  config: ExperimentConfig,
  settings: EmbeddedSettings,
) {
  let sweep: SweepResult | undefined;
  if (sweeps.includes("cue")) {
    const sweepBar = createProgress(SWEEP_CUE_RATES.length + SWEEP_CUE_STRENGTHS.length, "sweep");
    sweep = await runSweep(config, settings, (label, i) => sweepBar.update(i, label));
    sweepBar.stop();
    await writeFile(join(runDir, "sweep.json"), JSON.stringify(sweep, null, 2));
  }
  const pairedSweeps: PairedSweep[] = [];
  for (const kind of ["router", "reanchor"] as const) {
    if (!sweeps.includes(kind)) continue;
    const started = Date.now();
    const result = await runPairedSweep(kind, config, settings, (label, i, n) =>
      process.stderr.write(
        `${kind} sweep: point ${i + 1}/${n} (${label}), ${((Date.now() - started) / 1000).toFixed(0)} s so far\n`,
      ),
    );
    await writeFile(join(runDir, sweepFile(kind)), JSON.stringify(result, null, 2));
    pairedSweeps.push(result);
  }
  return { sweep, pairedSweeps };
}
