import { rename, stat, writeFile } from "node:fs/promises";
import { z } from "zod";
import { ArmSeedResult, SeedBaseline, UnitCheckpoint } from "@harness-s/core/experiment";
import { ValidationError, differingKeys } from "@harness-s/core";
import { readJsonFile } from "@harness-s/envs";

/** What a local experiment run has finished so far, written beside its results as it goes. */
export const Checkpoint = z.object({
  v: z.literal(1),
  /** Everything that decides the run's numbers: a resume must ask for exactly the same. */
  run: z.record(z.string(), z.unknown()),
  baselines: z.array(SeedBaseline),
  results: z.array(z.object({ arm: z.string(), result: ArmSeedResult })),
  /** Units part-way through training (a policy at a worker), each after its last finished step. */
  units: z.array(UnitCheckpoint).default([]),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** `run` as it reads back from JSON, so that a fresh run compares equal to its own checkpoint. */
const asJson = (run: Record<string, unknown>) => JSON.parse(JSON.stringify(run)) as Record<string, unknown>;

/**
 * Reads `path` for `--resume`: a missing file starts afresh; a file for another configuration,
 * or one that does not parse, is refused with the reason (nothing is overwritten).
 *
 * @example
 * const cp = await loadCheckpoint("results/run/checkpoint.json", { seeds: [1, 2] });
 */
export async function loadCheckpoint(path: string, run: Record<string, unknown>): Promise<Checkpoint | undefined> {
  const found = await readJsonFile(path, Checkpoint);
  if (!found) return undefined;
  const expected = asJson(run);
  const differs = differingKeys(expected, found.run);
  if (differs.length)
    throw new ValidationError(
      `checkpoint ${path}`,
      differs.map(
        (k) =>
          `written for another ${k}: ${JSON.stringify(found.run[k])}, this run asks for ${JSON.stringify(expected[k])}`,
      ),
    );
  return found;
}

/**
 * The run's checkpoint: with `resume`, what an earlier process finished (refused if it was written
 * for another configuration); without, a fresh one, refusing to overwrite an existing file.
 */
export async function openCheckpoint(path: string, run: Record<string, unknown>, resume: boolean) {
  if (!resume && (await stat(path).catch(() => undefined))) {
    throw new ValidationError("--out", [
      `${path} holds an earlier run's checkpoint: pass --resume to continue it, or choose another --out`,
    ]);
  }
  const found = resume ? await loadCheckpoint(path, run) : undefined;
  return checkpointWriter(path, found ?? { v: 1, run: asJson(run), baselines: [], results: [], units: [] });
}

/** Keeps `path` up to date with each finished baseline and (arm, seed); writes are atomic (rename). */
export function checkpointWriter(path: string, start: Checkpoint) {
  const state: Checkpoint = structuredClone(start);
  let chain: Promise<void> = Promise.resolve();
  const flush = () => {
    const text = JSON.stringify(state);
    chain = chain.then(async () => {
      await writeFile(`${path}.tmp`, text);
      await rename(`${path}.tmp`, path);
    });
    return chain;
  };
  return {
    state,
    addBaseline: (b: SeedBaseline) => {
      state.baselines.push(b);
      return flush();
    },
    addResult: (arm: string, result: ArmSeedResult) => {
      state.results.push({ arm, result });
      state.units = state.units.filter((u) => u.arm !== arm || u.seed !== result.seed);
      return flush();
    },
    saveUnit: (unit: UnitCheckpoint) => {
      state.units = [...state.units.filter((u) => u.arm !== unit.arm || u.seed !== unit.seed), unit];
      return flush();
    },
  };
}
