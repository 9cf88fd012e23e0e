import { z } from "zod";
import { Protocol, createRng, shuffled, type Rng, type Split, type Task } from "@harness-s/core";
import { appFamily } from "./app.ts";
import { dbFamily } from "./db.ts";
import type { FamilyModel } from "./family.ts";
import { repairFamily } from "./repair.ts";

export const families: readonly FamilyModel[] = [appFamily, repairFamily, dbFamily];

export function familyByName(name: string): FamilyModel {
  const f = families.find((x) => x.name === name);
  if (!f) throw new Error(`unknown embedded family ${name}`);
  return f;
}

export const SuiteOptions = z.object({
  seed: z.number().int().default(2026),
  /** Share of the train tasks with a cuable requirement whose own instruction cues it under H0 (exact). */
  cueRate: z.number().min(0).max(1).default(0.2),
  /** Requirement kinds that a task's own instruction may cue (the rest are never cued by H0). */
  cuable: z.array(z.string()).default(["pages", "mutation", "tricky"]),
  /** Pages of a paginated listing: minimum and spread. */
  minPages: z.number().int().min(2).default(3),
  pageSpread: z.number().int().min(1).default(2),
  trainPerCombo: z.number().int().min(1).default(8),
  devPerCombo: z.number().int().min(1).default(3),
  heldoutPerCombo: z.number().int().min(1).default(7),
  /**
   * "test" builds the held-out split (unseen combinations, never used for tuning). "validation"
   * builds no held-out task at all: it holds one train combination back (the pair a+b) and puts
   * it in the evaluation slot, so settings can be tuned on an unseen combination of seen
   * requirements without touching the test tasks.
   */
  protocol: Protocol.default("test"),
  /** Tasks per family of the held-back pair under the validation protocol (as many as held-out has). */
  validationPerCombo: z.number().int().min(1).default(21),
  /** Probability that a present requirement shows its visible tag; absent ones show it at `tagNoise`. */
  tagRate: z.number().min(0).max(1).default(0.6),
  tagNoise: z.number().min(0).max(1).default(0.1),
  /**
   * Side effects of harness edits: the probability, per task and per requirement the task does
   * *not* have, that this requirement's remedy (the tool its cue hints) silently spoils the
   * episode when used. A hint that is right in its area then misleads outside it. 0 (the
   * default) is the suite as it always was: an unneeded remedy only costs a turn.
   */
  sideEffects: z.number().min(0).max(1).default(0),
});
export type SuiteOptions = z.infer<typeof SuiteOptions>;

export interface Suite {
  train: Task[];
  dev: Task[];
  heldout: Task[];
  options: SuiteOptions;
}

/**
 * Requirement combinations: train and dev see each requirement, held-out only unseen combinations.
 * Under the validation protocol train and dev lose the pair a+b, which becomes the evaluation
 * split; no combination of the test held-out split is ever built.
 *
 * @example
 * combosFor(appFamily, "heldout", "validation"); // [["docs", "auth"]]
 */
export function combosFor(f: FamilyModel, split: Split, protocol: Protocol = "test"): string[][] {
  const [a, b, c] = f.requirements;
  if (protocol === "validation") return split === "heldout" ? [[a, b]] : [[], [a], [b], [c]];
  return split === "heldout"
    ? [
        [a, c],
        [b, c],
        [a, b, c],
      ]
    : [[], [a], [b], [c], [a, b]];
}

function makeTask(f: FamilyModel, split: Split, req: string[], index: number, opts: SuiteOptions, rng: Rng): Task {
  const tags = [f.name];
  for (const r of f.requirements) {
    const always = r === "mutation";
    const shown = always ? req.includes(r) : rng.next() < (req.includes(r) ? opts.tagRate : opts.tagNoise);
    if (shown) tags.push(f.tagFor[r]!);
  }
  const params: Record<string, number> = {
    pages: req.includes("pages") ? opts.minPages + rng.int(opts.pageSpread) : 1,
  };
  const slot = split === "heldout" && opts.protocol === "validation" ? "validation" : split;
  const id = `${f.name}-${slot}-${req.join("+") || "plain"}-${index}`;
  return {
    id,
    family: f.name,
    split,
    // No index: a task's number says nothing about what it needs, and a model could key on it.
    instruction: `${f.name} task (${tags.slice(1).join(", ") || "no tags"})`,
    tags,
    requirements: req,
    cues: [],
    params,
  };
}

/**
 * Cues exactly round(cueRate × n) of the n train tasks that have a cuable requirement, chosen by
 * one seeded shuffle, so a higher rate cues a superset of a lower one.
 */
function applyCues(train: Task[], opts: SuiteOptions, rng: Rng): void {
  const cuable = train.filter((t) => t.requirements.some((r) => opts.cuable.includes(r)));
  const chosen = shuffled(cuable, rng).slice(0, Math.round(opts.cueRate * cuable.length));
  for (const task of chosen) {
    const f = familyByName(task.family);
    task.cues = task.requirements.filter((r) => opts.cuable.includes(r)).flatMap((r) => f.cuesFor[r] ?? []);
    task.instruction += ` — ${task.cues.map((c) => c.text).join(" ")}`;
  }
}

/** The tool a requirement's first cue hints: what a harness edit for that requirement adds. */
export function remedyOf(f: FamilyModel, requirement: string): string {
  const hint = f.cuesFor[requirement]?.[0]?.hint;
  if (!hint) throw new Error(`family ${f.name} has no cue for ${requirement}`);
  return hint;
}

/** The task parameter that marks a tool as misleading on a task (read by the environment). */
export const misleadsParam = (tool: string) => `misleads:${tool}`;

function applySideEffects(tasks: Task[], rate: number, rng: Rng): void {
  for (const task of tasks) {
    const f = familyByName(task.family);
    const draw = rng.fork(task.id);
    for (const r of f.requirements)
      if (!task.requirements.includes(r) && draw.next() < rate) task.params[misleadsParam(remedyOf(f, r))] = 1;
  }
}

/**
 * Builds the embedded suite deterministically from `options.seed`.
 *
 * @example
 * const suite = buildSuite({ cueRate: 0.2 });
 * suite.train.length; // 120
 */
export function buildSuite(input: Partial<SuiteOptions> = {}): Suite {
  const options = SuiteOptions.parse(input);
  const rng = createRng(options.seed);
  const out: Suite = { train: [], dev: [], heldout: [], options };
  const perCombo: Record<Split, number> = {
    train: options.trainPerCombo,
    dev: options.devPerCombo,
    heldout: options.protocol === "validation" ? options.validationPerCombo : options.heldoutPerCombo,
  };
  for (const split of ["train", "dev", "heldout"] as const) {
    for (const f of families) {
      for (const req of combosFor(f, split, options.protocol)) {
        for (let i = 0; i < perCombo[split]; i++)
          out[split].push(makeTask(f, split, req, i, options, rng.fork(`${split}:${f.name}:${req}:${i}`)));
      }
    }
  }
  applyCues(out.train, options, rng.fork("cues"));
  if (options.sideEffects > 0)
    for (const split of ["train", "dev", "heldout"] as const)
      applySideEffects(out[split], options.sideEffects, rng.fork(`side-effects:${split}`));
  return out;
}
