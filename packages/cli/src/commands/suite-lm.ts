import { writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { z } from "zod";
import { ValidationError } from "@harness-s/core";
import { readJsonFile } from "@harness-s/envs";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { prepareOutDir } from "../out-dir.ts";
import { startPolicyWorker } from "../policy-worker.ts";
import { renderStartGates, renderStartTable, startGates, startTable } from "../suite-lm/compare.ts";
import { ensureSuiteLm, type SuiteLmBuild, type SuiteLmRecipe } from "../suite-lm/suite-lm.ts";
import { workerPolicySetup } from "@harness-s/functions/experiment-setup";

const log = (line: string) => process.stderr.write(`${line}\n`);

/** `harness-s suite-lm build`: builds (or finds) the model and prints its record. */
export async function suiteLmBuildCommand(recipe: SuiteLmRecipe, cacheDir: string): Promise<SuiteLmBuild> {
  const built = await ensureSuiteLm(recipe, cacheDir, log);
  const { losses, ...rest } = built;
  console.log(JSON.stringify({ ...rest, losses: losses.map((l) => Number(l.toFixed(4))) }, null, 2));
  return built;
}

export interface CompareOptions {
  recipe: SuiteLmRecipe;
  cacheDir: string;
  seeds: number[];
  tasks: number;
  samples: number;
  out: string;
  maxTokens: number;
  constrainToolCalls: boolean;
  /** A model folder already built (a block's committed model, an earlier build): no recipe, no build. */
  modelDir?: string;
}

/** A built model's folder as `ensureSuiteLm` would return it (its record is `suite-lm.json` inside). */
async function builtModel(dir: string): Promise<Pick<SuiteLmBuild, "path" | "name" | "weights_sha256">> {
  const path = resolve(dir);
  const record = await readJsonFile(
    join(path, "suite-lm.json"),
    z.object({ weights_sha256: z.string() }).passthrough(),
  );
  if (!record) throw new ValidationError("--model-dir", [`${path} holds no suite-lm.json: not a built suite LM`]);
  return { path, name: basename(path), weights_sha256: record.weights_sha256 };
}

/**
 * `harness-s suite-lm compare`: the embedded initial policy and the warm-started suite LM side by
 * side before any training (see {@link startTable}); writes start-table.json and start-table.md.
 */
export async function suiteLmCompareCommand(opts: CompareOptions): Promise<void> {
  const built = opts.modelDir ? await builtModel(opts.modelDir) : await ensureSuiteLm(opts.recipe, opts.cacheDir, log);
  await prepareOutDir(opts.out);
  const worker = await startPolicyWorker({ model: built.path, stateDir: join(opts.out, "worker") }, log);
  try {
    const embedded = embeddedSetup(defaultEmbeddedSettings);
    const token = workerPolicySetup(embedded, {
      url: worker.url,
      model: built.name,
      maxTokens: opts.maxTokens,
      constrainToolCalls: opts.constrainToolCalls,
    });
    const started = Date.now();
    const rows = await startTable(embedded, token, opts.seeds, { tasks: opts.tasks, samples: opts.samples }, (seed) =>
      log(`suite-lm compare: seed ${seed} (${((Date.now() - started) / 1000).toFixed(0)} s so far)`),
    );
    await writeFile(
      join(opts.out, "start-table.json"),
      JSON.stringify(
        {
          model: built.name,
          weights: built.weights_sha256,
          constrainToolCalls: opts.constrainToolCalls,
          tasks: opts.tasks,
          samples: opts.samples,
          rows,
          gates: startGates(rows),
        },
        null,
        2,
      ),
    );
    const md = `${renderStartTable(rows)}\n${renderStartGates(startGates(rows))}`;
    await writeFile(join(opts.out, "start-table.md"), md);
    console.log(md);
  } finally {
    await worker.stop();
  }
}
