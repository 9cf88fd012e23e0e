import { z } from "zod";
import { Split, dbbenchHarnesses } from "@harness-s/dbbench";
import { TuningObjective } from "./tuning/rule.ts";
import { int, jsonFlag, num, port, probability, seeds, TrainOverrides } from "./flags.ts";

/** The flags of each command, as commander hands them over (strings, booleans, declared defaults). */
const SWEEPS = ["cue", "router", "reanchor"] as const;
const sweepKinds = z
  .union([z.literal(true), z.string()])
  .transform((v) => (v === true ? ["cue"] : v.split(",").map((s) => s.trim())))
  .pipe(z.array(z.enum(SWEEPS, { error: (i) => `unknown sweep ${JSON.stringify(i.input)} (choose from ${SWEEPS.join(", ")})` })));
const protocol = z.enum(["test", "validation"]);
const positive = num((n) => n.positive());
const nonNegative = num((n) => n.min(0));
const url = z.url({ error: (i) => `not a URL: ${JSON.stringify(i.input)}` });

export const ExperimentFlags = z
  .strictObject({
    seeds: seeds.optional(),
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
    policyLr: positive,
    policyMaxTokens: int(1, 32_768),
    evalTasks: int(1).optional(),
  })
  .refine((o) => o.policy !== "worker" || o.policyUrl, { path: ["policyUrl"], message: "--policy worker needs --policy-url URL (start one with `harness-s policy-worker`)" })
  .refine((o) => !o.resume || o.out, { path: ["resume"], message: "--resume needs --out DIR (the run to continue)" });

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

export const ServeFlags = z.strictObject({
  port,
  host: z.string().min(1),
  apiKey: z.string().min(8, "an API key needs at least 8 characters").optional(),
});

export const BenchFlags = z.strictObject({ seconds: positive, worker: z.boolean().optional() });
export const PolicyServeFlags = z.strictObject({ port, host: z.string().min(1), cueStrength: nonNegative });

export const PolicyWorkerFlags = z.strictObject({
  model: z.string().min(1),
  port,
  host: z.string().min(1),
  token: z.string().min(1).optional(),
  stateDir: z.string().min(1).optional(),
});

const engineFlags = {
  engine: z.enum(["mysql", "sqlite"]),
  split: Split,
  concurrency: int(1, 64),
  data: z.string().min(1).optional(),
  mysqlUrl: url,
};

export const DbbenchVerifyFlags = z.strictObject({ ...engineFlags, json: z.boolean() });

export const DbbenchEvalFlags = z.strictObject({
  ...engineFlags,
  baseUrl: url,
  model: z.string().min(1),
  apiKey: z.string().min(1).optional(),
  harness: z.enum(dbbenchHarnesses.map((h) => h.id) as [string, ...string[]], {
    error: (i) => `no DBBench harness ${JSON.stringify(i.input)} (one of ${dbbenchHarnesses.map((h) => h.id).join(", ")})`,
  }),
  limit: int(1).optional(),
  out: z.string().min(1).optional(),
  systemFile: z.string().min(1).optional(),
  temperature: num((n) => n.min(0).max(2)),
  timeoutSeconds: positive,
  logprobs: z.boolean(),
});
