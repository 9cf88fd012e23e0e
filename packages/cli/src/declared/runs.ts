import { z } from "zod";
import { declareCommand, flag } from "../declare.ts";
import { int, jsonFlag, num, probability, seeds, TrainOverrides } from "../flags.ts";
import { DEFAULT_CANDIDATES, TuningObjective } from "../tuning/rule.ts";
import { timestamped } from "./shared.ts";

export const confirm = declareCommand({
  name: "confirm",
  summary:
    "Run a declared confirmation block once: fresh seeds, declared and committed in confirmation/blocks.json before the run; figures to confirmation/<block>/",
  args: [{ name: "<block>", description: "the block id, e.g. C1" }],
  flags: z.strictObject({
    jobs: flag(int(1, 64).default(2), "<n>", "experiment processes at once (each on part of the block)"),
  }),
  run: async (o, [block]) =>
    (await import("../commands/confirm.ts")).confirmCommand({ root: process.cwd(), block: block!, jobs: o.jobs }),
});

export const report = declareCommand({
  name: "report",
  summary: "Pool experiment runs of one configuration on disjoint seeds into one summary, report and plots",
  args: [{ name: "<runs...>", description: "result folders, each with a summary.json" }],
  flags: z.strictObject({
    out: flag(z.string().min(1), "<dir>", "where the pooled summary.json, report.md and plots go"),
  }),
  run: async (o, runs) => (await import("../commands/report.ts")).reportCommand(runs, o.out),
});

export const tune = declareCommand({
  name: "tune",
  summary:
    "Compare harness-s settings with the defaults on the validation protocol (no held-out task is built) and apply the adoption rule",
  flags: z.strictObject({
    seeds: flag(seeds.prefault("101-110"), "<list>", "seeds for tuning; keep them apart from the seeds you report"),
    candidates: flag(
      jsonFlag(z.record(z.string(), z.unknown())).optional(),
      "<json>",
      'name → training-config overrides, e.g. \'{"k=3":{"k":3}}\' (default: harness-s\'s own settings around the defaults)',
    ),
    train: flag(
      jsonFlag(TrainOverrides).optional(),
      "<json>",
      "overrides shared by the defaults and every candidate, e.g. '{\"steps\":10}'",
    ),
    minGain: flag(
      num((n) => n.min(0)).default(2),
      "<points>",
      "validation Avg@3 points a candidate must gain on average",
    ),
    minShare: flag(probability.default(0.7), "<share>", "share of seeds in which it must be better"),
    objective: flag(
      TuningObjective.default("harness-s"),
      "<arm>",
      "whose validation Avg@3 is maximised: harness-s, or a baseline (grpo-budget, grpo) when tuning shared settings",
    ),
    out: flag(z.string().min(1).optional(), "<dir>", "output folder (default results/tune-<timestamp>)"),
  }),
  run: async (o) =>
    (await import("../commands/tune.ts")).tuneCommand({
      seeds: o.seeds,
      out: o.out ?? timestamped("results/tune-"),
      train: o.train,
      candidates: o.candidates ?? DEFAULT_CANDIDATES,
      rule: { minGain: o.minGain / 100, minShare: o.minShare, objective: o.objective },
    }),
});
