import { z } from "zod";
import { ArmList } from "@harness-s/core";
import { defaultEmbeddedSettings } from "@harness-s/envs";
import { TuningObjective } from "./tuning/rule.ts";
import { EvalOptions, VerifyOptions } from "./commands/dbbench-options.ts";
import { remoteEnvFlags } from "./remote-env-flags.ts";
import { int, jsonFlag, num, port, probability, seeds, TrainOverrides, url } from "./flags.ts";

/** The flags of each command, as commander hands them over (strings, booleans, declared defaults). */
const SWEEPS = ["cue", "router", "reanchor"] as const;
const sweepKinds = z
  .union([z.literal(true), z.string()])
  .transform((v) => (v === true ? ["cue"] : v.split(",").map((s) => s.trim())))
  .pipe(z.array(z.enum(SWEEPS, { error: (i) => `unknown sweep ${JSON.stringify(i.input)} (choose from ${SWEEPS.join(", ")})` })));
const protocol = z.enum(["test", "validation"]);
const positive = num((n) => n.positive());
const nonNegative = num((n) => n.min(0));

export const ExperimentFlags = z
  .strictObject({
    seeds: seeds.optional(),
    arms: z
      .string()
      .transform((v) => v.split(",").map((s) => s.trim()))
      .pipe(ArmList)
      .optional(),
    out: z.string().min(1).optional(),
    quick: z.boolean(),
    sweep: sweepKinds.optional(),
    sideEffects: probability.optional(),
    cueHalfLife: positive.optional(),
    poolSize: int(1, 64).optional(),
    steps: int(1, 100_000).optional(),
    train: jsonFlag(TrainOverrides).optional(),
    cueRate: probability,
    cueStrength: nonNegative,
    fixedSuite: z.boolean(),
    protocol,
    resume: z.boolean(),
    runtime: z.enum(["in-process", "local-aws"]),
    policy: z.enum(["embedded", "worker"]),
    policyUrl: url.optional(),
    policyToken: z.string().min(1).optional(),
    policyModel: z.string().min(1),
    suiteLmSize: z.enum(["toy", "small", "base", "large"]),
    modelCache: z.string().min(1),
    policyLr: positive,
    policyMaxTokens: int(1, 32_768),
    policyMaxInFlight: int(1, 4096),
    constrainedCalls: z.boolean().optional(),
    evalTasks: int(1).optional(),
    evalSamples: int(3, 1000).optional(),
    profileBudget: int(0).optional(),
    voters: z.string().min(1).optional(),
    env: z.enum(["embedded", "dbbench", "appworld", "swe-gym"]),
    engine: z.enum(["mysql", "sqlite"]),
    mysqlUrl: url,
    pool: z.string().min(1).optional(),
    dbConcurrency: int(1, 256),
    ...remoteEnvFlags,
  })
  .refine((o) => o.policy === "worker" || o.policyModel === "tiny", { path: ["policyModel"], message: "--policy-model needs --policy worker" })
  .refine((o) => o.env === "embedded" || o.policy === "worker", { path: ["env"], message: "--env dbbench, appworld and swe-gym train a language model: they need --policy worker" })
  .refine((o) => o.env === "embedded" || (o.runtime === "in-process" && !o.sweep), { path: ["env"], message: "--env dbbench, appworld and swe-gym run in process, without sweeps" })
  .refine((o) => !o.resume || o.out, { path: ["resume"], message: "--resume needs --out DIR (the run to continue)" });

export const SuiteLmFlags = z.strictObject({
  size: z.enum(["toy", "small", "base", "large"]),
  modelSeed: int(0),
  epochs: int(0, 1000),
  warmStartSeeds: seeds,
  h0Samples: int(0, 1000),
  instruct: int(0, 100_000),
  instructEpochs: int(0, 100),
  instructInvented: num((n) => n.min(0).max(1)),
  cacheDir: z.string().min(1),
  seeds: seeds.optional(),
  constrainedCalls: z.boolean().optional(),
  modelDir: z.string().min(1).optional(),
  tasks: int(1).optional(),
  samples: int(3, 1000).optional(),
  maxTokens: int(1, 4096).optional(),
  out: z.string().min(1).optional(),
});

export const ConfirmFlags = z.strictObject({ jobs: int(1, 64) });
export const ReportFlags = z.strictObject({ out: z.string().min(1) });

export const TuneFlags = z.strictObject({
  seeds,
  candidates: jsonFlag(z.record(z.string(), z.unknown())).optional(),
  train: jsonFlag(TrainOverrides).optional(),
  minGain: num((n) => n.min(0)),
  minShare: probability,
  objective: TuningObjective,
  out: z.string().min(1).optional(),
});

export const EvolveFlags = z.strictObject({
  out: z.string().min(1),
  seed: int(0),
  cueStrength: nonNegative,
  sideEffects: probability.optional(),
  poolSize: int(1, 64).optional(),
  protocol,
});

export { ServeOptions as ServeFlags } from "./commands/serve.ts";
export { EnvServeOptions as EnvServeFlags } from "./commands/env-serve.ts";
export { EnvEvalFlags } from "./remote-env-flags.ts";
export { FixturesServeOptions as FixturesServeFlags } from "./commands/fixtures-serve.ts";

export const BenchFlags = z.strictObject({ seconds: positive, worker: z.boolean().optional(), env: z.enum(["embedded", "dbbench"]), mysqlUrl: z.string().url() });
export const PolicyServeFlags = z.strictObject({ port, host: z.string().min(1), cueStrength: nonNegative });

export const PolicyWorkerFlags = z.strictObject({
  model: z.string().min(1),
  port,
  host: z.string().min(1),
  token: z.string().min(1).optional(),
  stateDir: z.string().min(1).optional(),
  device: z
    .string()
    .regex(/^(cpu|cuda(:\d+)?)$/, "cpu, cuda or cuda:<n>")
    .optional(),
  maxPolicies: int(1, 100_000).optional(),
  maxEpisodes: int(1, 10_000_000).optional(),
  maxBodyMb: int(1, 4096).optional(),
  kvCacheMb: int(0, 1 << 20).optional(),
  sampleTimeoutS: positive.optional(),
  toolParser: z.enum(["hermes", "llama3_json", "mistral"]).optional(),
});

// dbbench's commands parse their own options (strings or numbers) with these; the flags only
// let --data and --out be left to the command's defaults.
export const DbbenchVerifyFlags = VerifyOptions.extend({ data: z.string().min(1).optional() }).strict();
export const DbbenchEvalFlags = EvalOptions.extend({ data: z.string().min(1).optional(), out: z.string().min(1).optional(), apiKey: z.string().min(1).optional() }).strict();

/** `harness-s policy-serve` defaults (the embedded policy over HTTP). */
export const policyServeDefaults = { port: 8700, host: "127.0.0.1", cueStrength: defaultEmbeddedSettings.cueStrength };
