import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import {
  ExperimentConfig,
  runExperimentToEnd,
  type ArmSeedResult,
  type SeedInstance,
} from "@harness-s/core/experiment";
import { ValidationError } from "@harness-s/core";
import { mean, pairedSummary } from "@harness-s/core/metrics";
import { embeddedSetup, type EmbeddedSettings } from "@harness-s/envs";
import { readJsonFile } from "@harness-s/envs";

/**
 * Paired sweeps of one arm against another (the router against random Top-k; re-anchoring
 * against none) over settings of the suite, the pool and training. Each point keeps its per-seed
 * values, so parts run on disjoint seeds merge into the sweep one run on all of them would give.
 */
export const SweepKind = z.enum(["router", "reanchor"]);
export type SweepKind = z.infer<typeof SweepKind>;

const ArmFigures = z.object({
  train: z.number(),
  heldout: z.number(),
  rollouts: z.number(),
  triggered: z.number(),
  replaced: z.number(),
});
const SeedFigures = z.object({
  seed: z.number().int(),
  poolSize: z.number().int(),
  harm: z.number(),
  a: ArmFigures,
  b: ArmFigures,
});

export const PairedSweepPoint = z.object({
  label: z.string(),
  params: z.record(z.string(), z.number()),
  perSeed: z.array(SeedFigures),
  /** The a arm's nonstationarity (see the summary's definition), mean over seeds. */
  nonstationarity: z.number(),
});
export type PairedSweepPoint = z.infer<typeof PairedSweepPoint>;

export const PairedSweep = z.object({
  kind: SweepKind,
  arms: z.tuple([z.string(), z.string()]),
  protocol: z.string(),
  seeds: z.array(z.number().int()),
  points: z.array(PairedSweepPoint),
});
export type PairedSweep = z.infer<typeof PairedSweep>;

interface PointSpec {
  label: string;
  params: Record<string, number>;
  settings: Partial<EmbeddedSettings>;
  train: Record<string, unknown>;
}

export const ROUTER_POOL_SIZES = [4, 8, 16, 32];
export const ROUTER_KS = [1, 2];
export const ROUTER_SIDE_EFFECTS = [0, 0.5];
export const REANCHOR_HALF_LIVES = [0, 20, 10];
/** The default probe budget, and four times it (is the probe too small to track a shift?). */
export const REANCHOR_BUDGETS = [40, 160];

/** The grid of a sweep kind: every point differs from the defaults only in its `params`. */
export function sweepPoints(kind: SweepKind): PointSpec[] {
  if (kind === "reanchor") {
    return REANCHOR_BUDGETS.flatMap((budget) =>
      REANCHOR_HALF_LIVES.map((h) => ({
        label: `${h ? `hint half-life ${h} steps` : "fixed hints"}, probe ${budget} rollouts`,
        params: { cueHalfLife: h, reanchorBudget: budget },
        settings: h ? { cueHalfLife: h } : {},
        train: { reanchorBudget: budget },
      })),
    );
  }
  return ROUTER_SIDE_EFFECTS.flatMap((side) =>
    ROUTER_POOL_SIZES.flatMap((poolSize) =>
      ROUTER_KS.map((k) => ({
        label: `pool ${poolSize}, k ${k}, side effects ${side}`,
        params: { poolSize, k, sideEffects: side },
        settings: { poolSize, sideEffects: side },
        train: { k },
      })),
    ),
  );
}

export const sweepArms = (kind: SweepKind): [string, string] =>
  kind === "router" ? ["harness-s", "harness-s-random"] : ["harness-s", "harness-s-noreanchor"];

function figures(r: ArmSeedResult) {
  return {
    train: r.h0.train.avgAt3,
    heldout: r.h0.heldout.avgAt3,
    rollouts: r.rollouts,
    triggered: r.rescue.triggered,
    replaced: r.rescue.replaced,
  };
}

/**
 * Runs every point of `kind` on `base.seeds`. Points that share a suite and pool setting share
 * their evolved instances (k, hint decay and the arms do not change evolution).
 */
export async function runPairedSweep(
  kind: SweepKind,
  base: ExperimentConfig,
  embedded: EmbeddedSettings,
  onPoint: (label: string, index: number, total: number) => void,
): Promise<PairedSweep> {
  const arms = sweepArms(kind);
  const specs = sweepPoints(kind);
  const instances = new Map<string, Promise<SeedInstance>>();
  const points: PairedSweepPoint[] = [];
  for (const [i, spec] of specs.entries()) {
    onPoint(spec.label, i, specs.length);
    const settings = { ...embedded, ...spec.settings };
    const deps = embeddedSetup(settings);
    const shared = (seed: number) => {
      const key = JSON.stringify([
        seed,
        settings.cueRate,
        settings.cueStrength,
        settings.protocol,
        settings.sideEffects ?? 0,
        settings.poolSize ?? 8,
        settings.fixedSuite,
      ]);
      if (!instances.has(key)) instances.set(key, deps.instance(seed));
      return instances.get(key)!;
    };
    const config = ExperimentConfig.parse({ ...base, arms, train: { ...base.train, ...spec.train } });
    const summary = await runExperimentToEnd(config, { ...deps, instance: shared });
    const [a, b] = arms.map((name) => summary.arms.find((x) => x.name === name)!);
    const perSeed = await Promise.all(
      a!.perSeed.map(async (ra) => {
        const rb = b!.perSeed.find((x) => x.seed === ra.seed)!;
        const evo = (await shared(ra.seed)).evolution;
        const harms = Object.values(evo.harm.siblings).map((h) => h.harmRate);
        return { seed: ra.seed, poolSize: evo.pool.siblings.length, harm: mean(harms), a: figures(ra), b: figures(rb) };
      }),
    );
    points.push({ label: spec.label, params: spec.params, perSeed, nonstationarity: summary.suite.nonstationarity });
  }
  return { kind, arms, protocol: base.protocol, seeds: base.seeds, points };
}

/** Paired a − b of one figure at a point: mean, spread, 95% interval, seeds better. */
export function pointDiff(p: PairedSweepPoint, field: "train" | "heldout") {
  return pairedSummary(p.perSeed.map((s) => s.a[field] - s.b[field]));
}

/**
 * Merges sweeps of one kind and configuration run on disjoint seeds (per-seed values are
 * concatenated; a point's nonstationarity is the seed-weighted mean).
 */
export function mergeSweeps(parts: readonly PairedSweep[]): PairedSweep {
  const [first, ...rest] = parts;
  if (!first) throw new ValidationError("sweep", ["nothing to merge"]);
  for (const p of rest) {
    if (
      p.kind !== first.kind ||
      p.protocol !== first.protocol ||
      JSON.stringify(p.points.map((x) => x.label)) !== JSON.stringify(first.points.map((x) => x.label))
    ) {
      throw new ValidationError("sweep", ["parts come from different sweeps"]);
    }
  }
  const seeds = parts.flatMap((p) => p.seeds);
  if (new Set(seeds).size !== seeds.length) throw new ValidationError("sweep", ["parts share a seed"]);
  const points = first.points.map((pt, i) => {
    const all = parts.map((p) => p.points[i]!);
    const n = all.reduce((s, x) => s + x.perSeed.length, 0);
    return {
      ...pt,
      perSeed: all.flatMap((x) => x.perSeed),
      nonstationarity: all.reduce((s, x) => s + x.nonstationarity * x.perSeed.length, 0) / n,
    };
  });
  return { ...first, seeds, points };
}

export const sweepFile = (kind: SweepKind) => `sweep-${kind}.json`;

/**
 * Merges the parts' sweep files of each kind into `out` when every part has one; a kind only
 * some parts ran is left out (with a note), since its seeds would not be the summary's.
 */
export async function mergeSweepParts(
  dirs: readonly string[],
  out: string,
  note: (line: string) => void = () => {},
): Promise<PairedSweep[]> {
  const merged: PairedSweep[] = [];
  for (const kind of SweepKind.options) {
    const files = dirs.map((d) => join(d, sweepFile(kind)));
    const present = files.filter((f) => existsSync(f));
    if (present.length === 0) continue;
    if (present.length < files.length) {
      note(`the ${kind} sweep is in ${present.length} of ${files.length} runs: left out of the pooled report`);
      continue;
    }
    const parts = await Promise.all(files.map(async (f) => (await readJsonFile(f, PairedSweep))!));
    const sweep = mergeSweeps(parts);
    await writeFile(join(out, sweepFile(kind)), JSON.stringify(sweep, null, 2));
    merged.push(sweep);
  }
  return merged;
}
