import { rank1Picker } from "../routing/rank1.ts";
import type { Environment } from "../ports.ts";
import { rolloutsIn } from "../rollout/episode-runner.ts";
import { BudgetExceededError } from "../errors.ts";
import { evaluateTasks } from "../training/evaluate.ts";
import { createRng, hash32, type Rng } from "../util/rng.ts";
import { budgetSource, extraRolloutsOf, runOrder } from "./arms.ts";
import { summarise } from "./summarise.ts";
import type { ArmSeedResult, ExperimentSummary, SeedBaseline } from "./summary.ts";
import type { ExperimentConfig, ExperimentDeps, SeedInstance, StopReason } from "./experiment-config.ts";
import { evalSet, score, trainUnit } from "./unit.ts";

export * from "./experiment-config.ts";
export * from "./arms.ts";

/** The default {@link ExperimentDeps.runnerFor}: every rollout runs here, with the policy itself. */
export function inProcessRunners(env: Environment): NonNullable<ExperimentDeps["runnerFor"]> {
  return (_policyId, policy) => rolloutsIn(env, policy);
}

/** (arm, seed) units neither finished in this attempt nor carried over from an earlier one. */
function unitsLeft(
  config: ExperimentConfig,
  perArm: ReadonlyMap<string, readonly ArmSeedResult[]>,
  resumed: NonNullable<ExperimentDeps["resume"]>["results"] = [],
): number {
  const done = new Set([...perArm.entries()].flatMap(([arm, runs]) => runs.map((r) => `${arm}/${r.seed}`)));
  for (const r of resumed) done.add(`${r.arm}/${r.result.seed}`);
  return config.seeds.flatMap((seed) => config.arms.map((arm) => `${arm}/${seed}`)).filter((u) => !done.has(u)).length;
}

/**
 * How an attempt ended: with every unit trained, paused at a boundary (to be continued), or
 * stopped for good (cancelled, or its budget cap reached; what it finished is kept).
 */
export type ExperimentOutcome =
  | { kind: "done"; summary: ExperimentSummary }
  | { kind: "paused"; remaining: number }
  | { kind: "stopped"; reason: StopReason; remaining: number };

/** The initial policy's scores on a seed (reused from an earlier attempt when it has them). */
async function seedBaseline(
  config: ExperimentConfig,
  deps: ExperimentDeps,
  inst: SeedInstance,
  seed: number,
  rng: Rng,
  runnerFor: NonNullable<ExperimentDeps["runnerFor"]>,
): Promise<SeedBaseline> {
  const saved = deps.resume?.baselines.find((b) => b.seed === seed);
  if (saved) return saved;
  const { pool, initialProfiles } = inst.evolution;
  const evalBase = hash32("eval", seed);
  const initial = deps.policies
    ? await deps.policies.create(`initial/${seed}`, seed)
    : { policy: deps.createPolicy(seed) };
  const runner0 = runnerFor(`initial/${seed}`, initial.policy, seed);
  const h0Train = await evaluateTasks(
    evalSet(config, inst.train),
    () => pool.base,
    config.evalSamples,
    evalBase,
    runner0,
  );
  const h0Held = await evaluateTasks(
    evalSet(config, inst.heldout),
    () => pool.base,
    config.evalSamples,
    evalBase,
    runner0,
  );
  const pick0 = rank1Picker(pool, initialProfiles, { voters: deps.voters, rng: rng.fork("rank1") });
  const r1 = await evaluateTasks(evalSet(config, inst.heldout), pick0, config.evalSamples, evalBase, runner0);
  const baseline = {
    seed,
    h0: { train: score(h0Train), heldout: score(h0Held) },
    rank1: { heldout: score(r1) },
    behaviours: h0Train.behaviours,
    byCombination: { heldout: h0Held.byCombination },
  };
  await deps.onSeedBaseline?.(baseline);
  if ("id" in initial) await deps.policies?.release?.(initial.id);
  return baseline;
}

/**
 * Trains every arm over every seed from the same initial policy per seed, on that seed's
 * benchmark instance and frozen pool (see {@link ExperimentDeps.instance}), evaluates all of them
 * under H0 on train and held-out tasks with paired seeds, and summarises. `grpo-budget` gets,
 * per seed, exactly the extra rollouts that `harness-s` spent (rescue + re-anchoring): what each
 * arm does comes from its registered definition (`registerArm`). With
 * `shouldYield` an attempt may pause at a unit or step boundary: `{ kind: "paused" }`, and the
 * next attempt (with `resume`) continues there.
 *
 * @example
 * const outcome = await runExperiment(ExperimentConfig.parse({ seeds: [1, 2] }), deps);
 * if (outcome.kind === "done") report(outcome.summary);
 */
export async function runExperiment(config: ExperimentConfig, deps: ExperimentDeps): Promise<ExperimentOutcome> {
  const progress = { perArm: new Map<string, ArmSeedResult[]>(), remaining: () => 0 };
  try {
    return await runUnits(config, deps, progress);
  } catch (err) {
    // A budget cap is checked per rollout (a hard cap: billing depends on it), so it ends a run in
    // the middle of whatever asked for the rollout; here that refusal becomes the run's outcome.
    if (err instanceof BudgetExceededError)
      return { kind: "stopped", reason: { kind: "budget", detail: err.message }, remaining: progress.remaining() };
    throw err;
  }
}

async function runUnits(
  config: ExperimentConfig,
  deps: ExperimentDeps,
  progress: { perArm: Map<string, ArmSeedResult[]>; remaining: () => number },
): Promise<ExperimentOutcome> {
  const order = runOrder(config.arms);
  const source = budgetSource()?.name;
  const perArm = progress.perArm;
  for (const a of order) perArm.set(a, []);
  progress.remaining = () => unitsLeft(config, perArm, deps.resume?.results);
  const baselines: SeedBaseline[] = [];
  const instances = new Map<number, SeedInstance>();
  const paused = (): ExperimentOutcome => ({
    kind: "paused",
    remaining: unitsLeft(config, perArm, deps.resume?.results),
  });
  let trainedNow = 0; // units trained by this attempt: each attempt finishes at least one

  for (const seed of config.seeds) {
    const inst = await deps.instance(seed);
    instances.set(seed, inst);
    const rng = createRng(seed);
    const runnerFor = deps.runnerFor ?? inProcessRunners(deps.env);
    baselines.push(await seedBaseline(config, deps, inst, seed, rng, runnerFor));
    let extra = 0;
    for (const name of order) {
      const done = deps.resume?.results.find((r) => r.arm === name && r.result.seed === seed)?.result;
      if (done) {
        if (name === source) extra = extraRolloutsOf(done.rolloutBreakdown);
        perArm.get(name)!.push(done);
        continue;
      }
      const stop = deps.shouldStop?.();
      if (stop) return { kind: "stopped", reason: stop, remaining: progress.remaining() };
      if (trainedNow > 0 && deps.shouldYield?.()) return paused();
      const unit = await trainUnit({ config, deps, inst, seed, rng, runnerFor, name, extra });
      if (unit.kind === "paused") return paused();
      if (unit.kind === "stopped") return { kind: "stopped", reason: unit.reason, remaining: progress.remaining() };
      if (name === source) extra = extraRolloutsOf(unit.result.rolloutBreakdown);
      trainedNow++;
      perArm.get(name)!.push(unit.result);
      await deps.onArmSeed?.(name, unit.result);
      if (unit.policyId !== undefined) await deps.policies?.release?.(unit.policyId);
    }
  }
  return { kind: "done", summary: summarise(config, { perArm, baselines, instances }) };
}

/**
 * {@link runExperiment} for callers that never pause it (no `shouldYield`): the summary.
 *
 * @example
 * const summary = await runExperimentToEnd(ExperimentConfig.parse({ seeds: [1] }), deps);
 */
export async function runExperimentToEnd(
  config: ExperimentConfig,
  deps: Omit<ExperimentDeps, "shouldYield" | "shouldStop">,
): Promise<ExperimentSummary> {
  const outcome = await runExperiment(config, deps);
  if (outcome.kind === "stopped") throw new BudgetExceededError(outcome.reason.detail); // only a budget cap stops a run without shouldStop
  if (outcome.kind !== "done") throw new Error("unreachable: a run without shouldYield never pauses");
  return outcome.summary;
}
