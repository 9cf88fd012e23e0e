import { writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { prepareOutDir } from "../out-dir.ts";
import { createProgress } from "../progress.ts";

/** Evolves a sibling pool from the embedded H0 on the suite instance of `seed` and saves it as JSON. */
export async function evolveCommand(opts: {
  out: string;
  seed: number;
  cueStrength: number;
  sideEffects?: number;
  poolSize?: number;
  protocol?: "test" | "validation";
}): Promise<void> {
  const bar = createProgress(1, "evolving");
  const settings = {
    ...defaultEmbeddedSettings,
    cueStrength: opts.cueStrength,
    protocol: opts.protocol ?? "test",
    ...(opts.sideEffects ? { sideEffects: opts.sideEffects } : {}),
    ...(opts.poolSize ? { poolSize: opts.poolSize } : {}),
  };
  const deps = embeddedSetup(settings, (_s, d, t) => bar.update(d / t, `${d}/${t} direction rounds`));
  const { evolution } = await deps.instance(opts.seed);
  bar.stop();
  await prepareOutDir(dirname(opts.out));
  await writeFile(opts.out, JSON.stringify({ ...evolution.pool, notes: { ...evolution.pool.notes, repairSets: evolution.repairSets }, harm: evolution.harm }, null, 2));
  console.log(`pool ${evolution.pool.version}: ${evolution.pool.siblings.length} siblings, ${evolution.rolloutsSpent} dev rollouts`);
  console.log(`H0 fails ${evolution.h0Failures.length} dev tasks; locality ${evolution.locality.toFixed(3)}, complementarity ${evolution.complementarity.toFixed(3)}`);
  console.log(`H0 solves ${evolution.harm.h0Solved} dev tasks; harm = the share of them a sibling fails`);
  for (const s of evolution.pool.siblings) {
    const harm = evolution.harm.siblings[s.id]!;
    console.log(`  ${s.id.padEnd(24)} repairs ${String(evolution.repairSets[s.id]!.length).padStart(2)}  harm ${(100 * harm.harmRate).toFixed(1).padStart(5)}%  ${s.description}`);
  }
  console.log(`written to ${opts.out}`);
}
