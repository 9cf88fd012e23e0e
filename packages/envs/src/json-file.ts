import { readFile } from "node:fs/promises";
import type { z } from "zod";
import { ValidationError, parseOrThrow } from "@harness-s/core";

/**
 * Reads and validates a JSON file the CLI wrote earlier (a summary, a checkpoint): undefined when
 * it does not exist; a ValidationError naming the file when it is not JSON or not the schema.
 *
 * @example
 * const summary = await readJsonFile("results/run/summary.json", ExperimentSummary);
 */
export async function readJsonFile<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S> | undefined> {
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
    throw new ValidationError(path, [`not JSON: ${(err as Error).message}`]);
  }
  return parseOrThrow(schema, json, path);
}
