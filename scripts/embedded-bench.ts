// CPU of the embedded engine in one process: evolving the sibling pools of seeds 1–4 (fresh
// instances), then the `--quick` experiment's config on seed 1; repeated, best of each kept. Run
// it at two commits to compare them (both under tsx, as the CLI runs), and check with
// `experiment --quick` that the summaries are byte-identical.
// Run: node --import tsx scripts/embedded-bench.ts [repeats, default 3]
import { ExperimentConfig, runExperimentToEnd } from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { EXPERIMENT_PRESETS } from "../packages/cli/src/declared/experiment-presets.ts";

const repeats = Number(process.argv[2] ?? 3);
const cpuMs = async (work: () => Promise<unknown>) => {
  const start = process.cpuUsage();
  await work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
};
const { quick } = EXPERIMENT_PRESETS;
const config = ExperimentConfig.parse({ seeds: [1], evalSamples: quick.evalSamples, train: quick.train });

const best = { evolution: Number.POSITIVE_INFINITY, experiment: Number.POSITIVE_INFINITY };
for (let i = 0; i < repeats; i++) {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  best.evolution = Math.min(
    best.evolution,
    await cpuMs(() => Promise.all([1, 2, 3, 4].map((seed) => setup.instance(seed)))),
  );
  best.experiment = Math.min(best.experiment, await cpuMs(() => runExperimentToEnd(config, setup)));
  console.log(
    `repeat ${i + 1}/${repeats}: evolution ${best.evolution.toFixed(0)} ms, quick config on seed 1 ${best.experiment.toFixed(0)} ms (best so far)`,
  );
}
console.log(
  `| evolving seeds 1–4 | ${best.evolution.toFixed(0)} ms CPU |\n| the --quick config on seed 1 (pool already evolved) | ${best.experiment.toFixed(0)} ms CPU |`,
);
