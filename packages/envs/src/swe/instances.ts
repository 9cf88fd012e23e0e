import { readFile } from "node:fs/promises";
import { Task, ValidationError, formatIssues, hash32 } from "@harness-s/core";
import { FIXTURES_DIR } from "../fixtures/launch.ts";
import { SweInstance } from "./protocol.ts";

/** The instances of the local SWE-ReX-protocol server's fixture repositories. */
export const SWE_FIXTURE_INSTANCES = `${FIXTURES_DIR}/swe/instances.jsonl`;
/**
 * The order the slots are drawn in: held-out first (a third), then dev (a sixth), the rest train; each at least one.
 */
export const SWE_SPLIT_RULE =
  "the instances in the order of hash32(instance_id, 20261203): the first third (at least one) held-out, the next sixth (at least one) dev, the rest train";
const SPLIT_SEED = 20261203;

/** Reads SWE-bench-format instances, one JSON object per line, naming the line of every problem. */
export async function readSweInstances(path: string): Promise<SweInstance[]> {
  const lines = (await readFile(path, "utf8")).split("\n").filter((l) => l.trim());
  return lines.map((line, i) => {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new ValidationError(`${path} line ${i + 1}`, ["not JSON"]);
    }
    const parsed = SweInstance.safeParse(json);
    if (!parsed.success) throw new ValidationError(`${path} line ${i + 1}`, formatIssues(parsed.error.issues));
    return parsed.data;
  });
}

/** The instances as tasks, in the slots of {@link SWE_SPLIT_RULE}. */
export function sweTaskSets(instances: readonly SweInstance[]): { train: Task[]; dev: Task[]; heldout: Task[] } {
  if (instances.length < 3)
    throw new ValidationError("SWE instances", [
      `an experiment needs at least 3 (one per slot), got ${instances.length}`,
    ]);
  const ordered = [...instances].sort(
    (a, b) =>
      hash32(a.instance_id, SPLIT_SEED) - hash32(b.instance_id, SPLIT_SEED) || (a.instance_id < b.instance_id ? -1 : 1),
  );
  const nHeld = Math.max(1, Math.floor(ordered.length / 3));
  const nDev = Math.max(1, Math.floor(ordered.length / 6));
  const task = (split: "train" | "dev" | "heldout") => (i: SweInstance) =>
    Task.parse({ id: i.instance_id, family: "swe", split, instruction: "", tags: [i.repo.split("/").at(-1)!] });
  return {
    heldout: ordered.slice(0, nHeld).map(task("heldout")),
    dev: ordered.slice(nHeld, nHeld + nDev).map(task("dev")),
    train: ordered.slice(nHeld + nDev).map(task("train")),
  };
}
