import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { ensureWorkerVenv } from "../policy-worker.ts";
import type { SuiteLmRecipe } from "./recipe.ts";
import { instructionCorpus } from "./instruct-corpus.ts";
import { warmStartConversations } from "./warm-start.ts";

const WORKER_DIR = fileURLToPath(new URL("../../../policy-worker/", import.meta.url));

export { SuiteLmRecipe } from "./recipe.ts";

export const SuiteLmBuild = z.object({
  path: z.string(),
  hash: z.string(),
  cached: z.boolean(),
  parameters: z.number().int(),
  vocab: z.number().int(),
  conversations: z.number().int(),
  tokens: z.number().int(),
  trained_tokens: z.number().int(),
  losses: z.array(z.number()),
  weights_sha256: z.string(),
  seconds: z.number(),
  imitation_gap: z.record(z.string(), z.number().nullable()).optional(),
  /** The instruction-following stage: its corpus and loss, and −log p of the asked-for call on held-back turns. */
  instruct: z
    .object({
      conversations: z.number().int(),
      tokens: z.number().int(),
      losses: z.array(z.number()),
      nats_per_turn: z.number().nullable(),
      above_half: z.number().nullable(),
      turns: z.number().int(),
    })
    .optional(),
});
export type SuiteLmBuild = z.infer<typeof SuiteLmBuild> & { name: string };

/**
 * The suite LM for `recipe`, built on first use and cached in `cacheDir` under a hash of its
 * recipe and warm-start data (`suite-lm-<hash>`; the worker serves that folder and names the model
 * after it). The warm-start conversations come from the embedded initial policy (see
 * {@link warmStartConversations}); the build runs in the worker's venv.
 *
 * @example
 * const lm = await ensureSuiteLm(SuiteLmRecipe.parse({}), ".harness-s/models", console.error);
 * // harness-s policy-worker --model lm.path
 */
export async function ensureSuiteLm(
  recipe: SuiteLmRecipe,
  cacheDir: string,
  log: (line: string) => void = () => undefined,
  /** The embedded setup the episodes come from (one shared by several builds reuses its instances). */
  setup: Parameters<typeof warmStartConversations>[0] = embeddedSetup(defaultEmbeddedSettings),
): Promise<SuiteLmBuild> {
  const dir = resolve(cacheDir);
  await mkdir(dir, { recursive: true });
  log(
    `suite-lm: rendering the embedded initial policy's episodes (suite seeds ${recipe.warmStart.suiteSeeds.join(", ")})`,
  );
  const imitation = await warmStartConversations(setup, recipe.warmStart);
  const data = [...imitation, ...instructionCorpus(recipe.instruct)];
  const text = `${data.map((d) => JSON.stringify(d)).join("\n")}\n`;
  const dataFile = join(dir, `warm-start-${createHash("sha256").update(text).digest("hex").slice(0, 16)}.jsonl`);
  await writeFile(dataFile, text);
  const { warmStart: _w, instruct: _i, ...model } = recipe;
  const recipeFile = `${dataFile.replace(/\.jsonl$/, "")}.recipe-${createHash("sha256").update(JSON.stringify(model)).digest("hex").slice(0, 8)}.json`;
  await writeFile(recipeFile, JSON.stringify(model));
  const python = await ensureWorkerVenv(log);
  log(
    `suite-lm: ${imitation.length} imitation and ${data.length - imitation.length} instruction-following conversations; building (or finding) the ${recipe.size} model in ${dir}`,
  );
  const child = promisify(execFile)(
    python,
    ["-m", "harness_s_worker.suite_lm", "--recipe", recipeFile, "--data", dataFile, "--cache-dir", dir],
    {
      cwd: WORKER_DIR,
      maxBuffer: 16 << 20,
      env: { ...process.env, TOKENIZERS_PARALLELISM: "false" },
    },
  );
  child.child.stderr?.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) if (line.startsWith("suite-lm:")) log(line);
  });
  const { stdout } = await child;
  const built = SuiteLmBuild.parse(JSON.parse(stdout.trim().split("\n").at(-1)!));
  return { ...built, name: `suite-lm-${built.hash}` };
}
