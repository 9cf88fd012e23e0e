import { z } from "zod";
import { EvolutionConfig } from "@harness-s/core/evolution";
import { defaultEmbeddedSettings } from "@harness-s/envs";
import { declareCommand, flag } from "../declare.ts";
import { int, num, probability } from "../flags.ts";
import { DbEvolveOptions } from "../commands/dbbench-options.ts";

const db = DbEvolveOptions.shape;
const DBBENCH_ONLY = ["proposerUrl", "proposerModel", "policyUrl", "devTasks"] as const;

const EvolveFlags = z
  .strictObject({
    out: flag(z.string().min(1).default("results/pool.json"), "<file>", "where to write the pool"),
    seed: flag(int(0).default(1), "<n>", "the suite instance (and evolution) seed"),
    cueStrength: flag(num((n) => n.min(0)).default(defaultEmbeddedSettings.cueStrength), "<b>", "the policy's fixed logit bonus for a hinted action"),
    sideEffects: flag(probability.optional(), "<p>", "how often a sibling's edit misleads outside its area (see experiment)"),
    poolSize: flag(int(1, 64).optional(), "<n>", `siblings to keep (default ${EvolutionConfig.parse({}).poolSize}; DBBench ${db.poolSize.parse(undefined)})`),
    protocol: flag(z.enum(["test", "validation"]).default("test"), "<p>", "test, or validation (the dev split without the held-back pair)"),
    env: flag(z.enum(["embedded", "dbbench"]).default("embedded"), "<env>", "embedded, or dbbench (an LLM proposer; the policy at --policy-url; dev rows only)"),
    proposerUrl: flag(db.proposerUrl.optional(), "<url>", "dbbench: the proposer's OpenAI-compatible endpoint (key: HARNESS_S_PROPOSER_KEY)"),
    proposerModel: flag(db.proposerModel.optional(), "<m>", "dbbench: the proposer's model"),
    policyUrl: flag(db.policyUrl.optional(), "<url>", "dbbench: the policy's OpenAI-compatible endpoint, e.g. a policy worker's /v1 (key: HARNESS_S_POLICY_KEY)"),
    policyModel: flag(db.policyModel, "<m>", "dbbench: the model name the policy endpoint serves"),
    engine: flag(db.engine, "<e>", "dbbench: the SQL engine"),
    mysqlUrl: flag(db.mysqlUrl, "<url>", "dbbench: MySQL/MariaDB server"),
    maxCalls: flag(db.maxCalls, "<n>", "dbbench: proposer calls allowed in all"),
    maxRollouts: flag(db.maxRollouts, "<n>", "dbbench: rollouts allowed in all (H0's measurement included)"),
    rounds: flag(db.rounds, "<n>", "dbbench: rounds per direction"),
    candidates: flag(db.candidates, "<n>", "dbbench: proposals per round"),
    trials: flag(db.trials, "<n>", "dbbench: rollouts per dev row and candidate"),
    screen: flag(db.screen, "<n>", "dbbench: dev rows of the minibatch screen (GEPA-style) before the full dev set"),
    devTasks: flag(db.devTasks, "<n>", "dbbench: the first N dev rows only (smoke runs)"),
  })
  .refine((o) => o.env === "dbbench" || DBBENCH_ONLY.every((k) => o[k] === undefined), {
    path: ["env"],
    message: `--proposer-url, --proposer-model, --policy-url and --dev-tasks need --env dbbench`,
  });

export const evolve = declareCommand({
  name: "evolve",
  summary: "Evolve a sibling pool from H0 along the repair directions and save it (the embedded suite, or DBBench with an LLM proposer)",
  flags: EvolveFlags,
  run: async ({ env, cueStrength, sideEffects, protocol, ...o }) => {
    if (env === "dbbench") return (await import("../commands/evolve-dbbench.ts")).dbbenchEvolve(o as DbEvolveOptions);
    return (await import("../commands/evolve.ts")).evolveCommand({ out: o.out, seed: o.seed, cueStrength, sideEffects, poolSize: o.poolSize, protocol });
  },
});
