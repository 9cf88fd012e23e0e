import { writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { Protocol } from "@harness-s/core";
import type { FamilyIo } from "../registry.ts";
import { defaultEmbeddedSettings, embeddedSetup } from "./setup.ts";

/** What `evolve --env embedded` reads of its flags. */
const EmbeddedEvolveOptions = z.object({
  out: z.string().min(1),
  seed: z.number().int().min(0),
  cueStrength: z.number().min(0),
  sideEffects: z.number().min(0).max(1).optional(),
  poolSize: z.number().int().min(1).optional(),
  protocol: Protocol.optional(),
});

/** Evolves a sibling pool from the embedded H0 on the suite instance of `seed` and saves it as JSON. */
export async function evolveEmbedded(
  options: Readonly<Record<string, unknown>>,
  io: Pick<FamilyIo, "log" | "progress" | "prepareOutDir">,
): Promise<void> {
  const opts = EmbeddedEvolveOptions.parse(options);
  const bar = io.progress(1, "evolving");
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
  await io.prepareOutDir(dirname(opts.out));
  await writeFile(
    opts.out,
    JSON.stringify(
      { ...evolution.pool, notes: { ...evolution.pool.notes, repairSets: evolution.repairSets }, harm: evolution.harm },
      null,
      2,
    ),
  );
  io.log(
    `pool ${evolution.pool.version}: ${evolution.pool.siblings.length} siblings, ${evolution.rolloutsSpent} dev rollouts`,
  );
  io.log(
    `H0 fails ${evolution.h0Failures.length} dev tasks; locality ${evolution.locality.toFixed(3)}, complementarity ${evolution.complementarity.toFixed(3)}`,
  );
  io.log(`H0 solves ${evolution.harm.h0Solved} dev tasks; harm = the share of them a sibling fails`);
  for (const s of evolution.pool.siblings) {
    const harm = evolution.harm.siblings[s.id]!;
    io.log(
      `  ${s.id.padEnd(24)} repairs ${String(evolution.repairSets[s.id]!.length).padStart(2)}  harm ${(100 * harm.harmRate).toFixed(1).padStart(5)}%  ${s.description}`,
    );
  }
  io.log(`written to ${opts.out}`);
}
