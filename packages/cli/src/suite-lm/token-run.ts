import { readFile, writeFile } from "node:fs/promises";
import { ValidationError } from "@harness-s/core";
import type { ExperimentConfig, ExperimentDeps } from "@harness-s/core/experiment";
import type { ProfileSet } from "@harness-s/core/profile";
import type { WorkerDeps, WorkerPolicyOptions } from "@harness-s/functions/experiment-setup";
import { z } from "zod";
import { readJsonFile } from "@harness-s/envs";
import { StartRow, startTable } from "./compare.ts";

// What an experiment with its policy at a worker keeps beside its checkpoint, and its progress line.

/** A resumed run must continue on the very weights it started on (the build is deterministic; this checks it). */
export async function sameModel(file: string, weights: string): Promise<void> {
  const before = await readFile(file, "utf8").catch(() => undefined);
  if (!before) return;
  const started = (JSON.parse(before) as { weights_sha256?: string }).weights_sha256;
  if (started !== weights)
    throw new ValidationError("--resume", [
      `the run started on suite LM weights ${started?.slice(0, 12)}, and this build gave ${weights.slice(0, 12)}: it cannot continue on another model`,
    ]);
}

/** Each seed's token-policy profiles, kept in one file so a resumed run reuses them. */
export function savedProfiles(file: string): Omit<NonNullable<WorkerPolicyOptions["profiles"]>, "budget"> {
  const read = async (): Promise<Record<string, ProfileSet>> =>
    JSON.parse(await readFile(file, "utf8").catch(() => "{}"));
  let queue = Promise.resolve();
  return {
    saved: async (seed) => (await read())[String(seed)],
    save: (seed, profiles) =>
      (queue = queue.then(async () => {
        const all = await read();
        all[String(seed)] = profiles;
        await writeFile(file, JSON.stringify(all));
      })),
  };
}

/** The before-training table (computed once; a resumed run reads it back). */
export async function startTableOnce(
  file: string,
  embedded: Omit<ExperimentDeps, "onProgress">,
  token: Omit<ExperimentDeps, "onProgress">,
  config: ExperimentConfig,
): Promise<StartRow[]> {
  const saved = await readJsonFile(file, z.array(StartRow));
  if (saved) return saved;
  const rows = await startTable(
    embedded,
    token,
    config.seeds,
    { tasks: config.evalTasks ?? 1_000_000, samples: 3 },
    (seed) => process.stderr.write(`before training: embedded vs token model on seed ${seed}\n`),
  );
  await writeFile(file, JSON.stringify(rows, null, 2));
  return rows;
}

/**
 * ", 12.3 s/step, 1,234 tok/s (210 generated)" for a token policy: the step's time, and the
 * prompt and completion tokens sampled per second since the last step; "" otherwise.
 */
export function stepPace(sampled?: WorkerDeps["sampled"]): () => string {
  let last = Date.now();
  let seen = { all: 0, generated: 0 };
  return () => {
    const now = Date.now();
    const s = Math.max((now - last) / 1000, 1e-3);
    last = now;
    if (!sampled) return "";
    const all = sampled.promptTokens + sampled.completionTokens;
    const rate = (n: number) => Math.round(n / s).toLocaleString("en-US");
    const line = `, ${s.toFixed(1)} s/step, ${rate(all - seen.all)} tok/s (${rate(sampled.completionTokens - seen.generated)} generated)`;
    seen = { all, generated: sampled.completionTokens };
    return line;
  };
}
