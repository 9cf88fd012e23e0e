import { readFile, rename, writeFile } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { ArmSeedResult, SeedBaseline, ValidationError, formatIssues } from "@harness-s/core";

/** What a local experiment run has finished so far, written beside its results as it goes. */
export const Checkpoint = z.object({
  v: z.literal(1),
  /** Everything that decides the run's numbers: a resume must ask for exactly the same. */
  run: z.record(z.string(), z.unknown()),
  baselines: z.array(SeedBaseline),
  results: z.array(z.object({ arm: z.string(), result: ArmSeedResult })),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/**
 * Reads `path` for `--resume`: a missing file starts afresh; a file for another configuration,
 * or one that does not parse, is refused with the reason (nothing is overwritten).
 *
 * @example
 * const cp = await loadCheckpoint("results/run/checkpoint.json", { seeds: [1, 2] });
 */
export async function loadCheckpoint(path: string, run: Record<string, unknown>): Promise<Checkpoint | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ValidationError(`checkpoint ${path}`, [`not JSON: ${(err as Error).message}`]);
  }
  const parsed = Checkpoint.safeParse(json);
  if (!parsed.success) throw new ValidationError(`checkpoint ${path}`, formatIssues(parsed.error.issues));
  const expected = JSON.parse(JSON.stringify(run)) as Record<string, unknown>;
  const differs = [...new Set([...Object.keys(expected), ...Object.keys(parsed.data.run)])].filter((k) => !isDeepStrictEqual(expected[k], parsed.data.run[k]));
  if (differs.length) throw new ValidationError(`checkpoint ${path}`, differs.map((k) => `written for another ${k}: ${JSON.stringify(parsed.data.run[k])}, this run asks for ${JSON.stringify(expected[k])}`));
  return parsed.data;
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
    addBaseline: (b: SeedBaseline) => (state.baselines.push(b), flush()),
    addResult: (arm: string, result: ArmSeedResult) => (state.results.push({ arm, result }), flush()),
  };
}
