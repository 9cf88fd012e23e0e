import { z } from "zod";
import { evaluateTasks } from "@harness-s/core/training";
import {
  evenlySpaced,
  hash32,
  rolloutsIn,
  type Environment,
  type HarnessSpec,
  type Policy,
  type Task,
} from "@harness-s/core";
import { mean, pearson } from "@harness-s/core/metrics";
import type { ExperimentDeps } from "@harness-s/core/experiment";

export const PolicyAtStart = z.object({
  h0: z.object({ train: z.number(), heldout: z.number() }),
  /** Success on the train subset under each sibling of the frozen pool, minus H0's there. */
  siblings: z.record(z.string(), z.number()),
});
export type PolicyAtStart = z.infer<typeof PolicyAtStart>;

export const StartRow = z.object({
  seed: z.number().int(),
  embedded: PolicyAtStart,
  tokenModel: PolicyAtStart,
  /** The repair direction of each sibling. */
  directions: z.record(z.string(), z.string()),
});
export type StartRow = z.infer<typeof StartRow>;

async function atStart(
  env: Environment,
  policy: Policy,
  train: readonly Task[],
  heldout: readonly Task[],
  pool: { base: HarnessSpec; siblings: readonly HarnessSpec[] },
  samples: number,
  seed: number,
): Promise<PolicyAtStart> {
  const run = rolloutsIn(env, policy);
  const base = hash32("start", seed);
  const h0Train = (await evaluateTasks(train, () => pool.base, samples, base, run)).avgAt3;
  const h0Held = (await evaluateTasks(heldout, () => pool.base, samples, base, run)).avgAt3;
  const siblings: Record<string, number> = {};
  for (const s of pool.siblings)
    siblings[s.id] = (await evaluateTasks(train, () => s, samples, base, run)).avgAt3 - h0Train;
  return { h0: { train: h0Train, heldout: h0Held }, siblings };
}

/**
 * The two initial policies side by side before any training, per seed: the embedded log-linear
 * one and the token model (the warm-started suite LM), under H0 on train and held-out tasks and
 * under each sibling of the seed's frozen pool (relative to H0 on the same train tasks). Paired:
 * both run the same tasks with the same episode seeds.
 *
 * @example
 * const rows = await startTable(embedded, worker, [101, 102], { tasks: 24, samples: 3 });
 */
export async function startTable(
  embedded: Pick<ExperimentDeps, "env" | "createPolicy" | "instance">,
  token: Pick<ExperimentDeps, "env" | "createPolicy">,
  seeds: readonly number[],
  opts: { tasks: number; samples: number },
  onSeed: (seed: number) => void = () => undefined,
): Promise<StartRow[]> {
  const rows: StartRow[] = [];
  for (const seed of seeds) {
    onSeed(seed);
    const inst = await embedded.instance(seed);
    const { pool } = inst.evolution;
    const train = evenlySpaced(inst.train, opts.tasks);
    const heldout = evenlySpaced(inst.heldout, opts.tasks);
    const directions = Object.fromEntries(pool.siblings.map((s) => [s.id, s.provenance.direction]));
    const tokenPolicy = token.createPolicy(seed) as Policy & { release?: () => Promise<void> };
    rows.push({
      seed,
      embedded: await atStart(embedded.env, embedded.createPolicy(seed), train, heldout, pool, opts.samples, seed),
      tokenModel: await atStart(token.env, tokenPolicy, train, heldout, pool, opts.samples, seed),
      directions,
    });
    await tokenPolicy.release?.();
  }
  return rows;
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const pp = (x: number) => `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)}`;

/** The table as markdown: H0 per split, then each sibling's difference from H0, both policies. */
export function renderStartTable(rows: readonly StartRow[]): string {
  const lines = [
    "| seed | H0 train (embedded / token) | H0 held-out (embedded / token) | siblings vs H0 on train, pp (embedded / token) |",
    "|---|---|---|---|",
  ];
  for (const r of rows) {
    const sib = Object.keys(r.embedded.siblings).map(
      (id) => `${r.directions[id] ?? id} ${pp(r.embedded.siblings[id]!)} / ${pp(r.tokenModel.siblings[id]!)}`,
    );
    lines.push(
      `| ${r.seed} | ${pct(r.embedded.h0.train)} / ${pct(r.tokenModel.h0.train)} | ${pct(r.embedded.h0.heldout)} / ${pct(r.tokenModel.h0.heldout)} | ${sib.join("; ")} |`,
    );
  }
  const all = (f: (r: StartRow) => number) => mean(rows.map(f));
  const sibs = (side: "embedded" | "tokenModel") => rows.flatMap((r) => Object.values(r[side].siblings));
  const e = sibs("embedded");
  const t = sibs("tokenModel");
  const corr = pearson(e, t);
  lines.push(
    `| mean | ${pct(all((r) => r.embedded.h0.train))} / ${pct(all((r) => r.tokenModel.h0.train))} | ${pct(all((r) => r.embedded.h0.heldout))} / ${pct(all((r) => r.tokenModel.h0.heldout))} | mean ${pp(mean(e))} / ${pp(mean(t))}; correlation over siblings ${Number.isFinite(corr) ? corr.toFixed(2) : "n/a"} |`,
  );
  return `${lines.join("\n")}\n`;
}

/**
 * The gates a token model must pass before a block is declared on it (issue 32): its siblings − H0
 * response at least half of the embedded policy's, the two policies' per-sibling responses
 * correlated at 0.6 or more, and its H0 train success at least 0.7× the embedded policy's.
 */
export const START_GATES = { response: 0.5, correlation: 0.6, h0: 0.7 } as const;

export const StartGates = z.object({
  response: z.object({ ratio: z.number(), pass: z.boolean() }),
  correlation: z.object({ value: z.number(), pass: z.boolean() }),
  h0: z.object({ ratio: z.number(), pass: z.boolean() }),
  pass: z.boolean(),
});
export type StartGates = z.infer<typeof StartGates>;

/** The gates over every row's siblings and H0 (ratios are token / embedded; NaN fails). */
export function startGates(rows: readonly StartRow[]): StartGates {
  const e = rows.flatMap((r) => Object.values(r.embedded.siblings));
  const t = rows.flatMap((r) => Object.values(r.tokenModel.siblings));
  const response = mean(t) / mean(e);
  const correlation = pearson(e, t);
  const h0 = mean(rows.map((r) => r.tokenModel.h0.train)) / mean(rows.map((r) => r.embedded.h0.train));
  const gates = {
    response: { ratio: response, pass: response >= START_GATES.response },
    correlation: { value: correlation, pass: correlation >= START_GATES.correlation },
    h0: { ratio: h0, pass: h0 >= START_GATES.h0 },
  };
  return { ...gates, pass: gates.response.pass && gates.correlation.pass && gates.h0.pass };
}

/** One line: each gate's value against its threshold. */
export function renderStartGates(g: StartGates): string {
  const mark = (pass: boolean) => (pass ? "pass" : "FAIL");
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
  return `Gates: response ${f(g.response.ratio)}× (≥ ${START_GATES.response}) ${mark(g.response.pass)}; correlation ${f(g.correlation.value)} (≥ ${START_GATES.correlation}) ${mark(g.correlation.pass)}; H0 train ${f(g.h0.ratio)}× (≥ ${START_GATES.h0}) ${mark(g.h0.pass)}\n`;
}

/** The report's section on the two policies before training (empty without rows). */
export function startTableSection(rows: readonly StartRow[] | undefined): string {
  return rows?.length
    ? `\n## Before training: the embedded initial policy and the token model side by side\n\n${renderStartTable(rows)}`
    : "";
}
