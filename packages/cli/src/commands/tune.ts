import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ExperimentConfig, runExperimentToEnd, type ExperimentSummary } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { ValidationError, parseOrThrow } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { prepareOutDir } from "../out-dir.ts";
import { createProgress } from "../progress.ts";
import { Candidates, TuningRule, decide, renderTuning, tuningRows, type TuningRow } from "../tuning/rule.ts";

export interface TuneOptions {
  seeds: number[];
  out: string;
  /** Overrides shared by every candidate (and the default), e.g. fewer steps. */
  train?: Record<string, unknown>;
  candidates: Record<string, unknown>;
  rule?: Partial<TuningRule>;
}

const ARMS = ["grpo", "grpo-budget", "harness-s"] as const;

/**
 * `harness-s tune`: runs the defaults and each candidate on the validation protocol (the train
 * pair a+b held back; no held-out task is built), paired by seed, and applies the rule.
 * Writes tune.json and tune.md to `out`.
 *
 * @example
 * const { decision } = await tuneCommand({ seeds: [101, 102], out: "results/tune", candidates: { "k=3": { k: 3 } } });
 */
export async function tuneCommand(opts: TuneOptions): Promise<{ rows: TuningRow[]; decision: string }> {
  const candidates = parseOrThrow(Candidates, opts.candidates, "--candidates");
  if ("default" in candidates) throw new ValidationError("--candidates", ["default is always run; give it no entry"]);
  const rule = parseOrThrow(TuningRule, opts.rule ?? {}, "tuning rule");
  const base = opts.train ?? {};
  const plans = [["default", {}] as const, ...Object.entries(candidates)].map(([name, over]) => ({
    name,
    config: ExperimentConfig.parse({
      seeds: opts.seeds,
      arms: [...ARMS],
      train: parseOrThrow(TrainConfig, { ...base, ...over }, `candidate ${name}`),
      protocol: "validation",
    }),
  }));
  await prepareOutDir(opts.out);
  const units = opts.seeds.length * ARMS.length * plans[0]!.config.train.steps;
  const bar = createProgress(plans.length * units, "tuning");
  const deps = embeddedSetup({ ...defaultEmbeddedSettings, protocol: "validation" });
  const runs = new Map<string, ExperimentSummary>();
  for (const [i, plan] of plans.entries()) {
    let done = i * units;
    runs.set(
      plan.name,
      await runExperimentToEnd(plan.config, {
        ...deps,
        onProgress: (e) => bar.update(++done, `${plan.name}: seed ${e.seed} ${e.arm}`),
      }),
    );
  }
  bar.stop();
  const rows = tuningRows(runs, candidates, rule);
  const decision = decide(rows)?.name ?? "default";
  const report = renderTuning(rows, opts.seeds, rule);
  await writeFile(
    join(opts.out, "tune.json"),
    JSON.stringify({ seeds: opts.seeds, base, rule, rows, decision }, null, 2),
  );
  await writeFile(join(opts.out, "tune.md"), report);
  console.log(report);
  return { rows, decision };
}
