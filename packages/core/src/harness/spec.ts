import { z } from "zod";
import { ValidationError, formatIssues } from "../errors.ts";

export const Direction = z.enum([
  "base",
  "contract",
  "recon",
  "pre-action",
  "recovery",
  "loop-breaking",
  "verification",
  "budget",
  "decomposition",
]);
export type Direction = z.infer<typeof Direction>;

const name = z.string().min(1).max(80);

/** After an observation whose event matches `on` (exact, or a prefix ending in `*`), hint `hint`. */
export const Trigger = z.object({
  on: name,
  hint: name,
  text: z.string().max(400).default(""),
  priority: z.number().int().min(0).max(100).default(0),
  maxFires: z.number().int().min(1).max(100).default(3),
});
export type Trigger = z.infer<typeof Trigger>;

/** Before `action` runs: if any of `requires` facts is missing, warn (hint) or block (turn spent). */
export const PreActionCheck = z.object({
  action: name,
  requires: z.array(name).min(1),
  mode: z.enum(["warn", "block"]).default("warn"),
  hint: name.optional(),
  maxBlocks: z.number().int().min(0).max(20).default(2),
});
export type PreActionCheck = z.infer<typeof PreActionCheck>;

export const CommitGate = z.object({
  requires: z.array(name).min(1),
  hint: name.optional(),
  maxBlocks: z.number().int().min(0).max(20).default(2),
});
export type CommitGate = z.infer<typeof CommitGate>;

export const Budget = z
  .object({
    maxTurns: z.number().int().min(1).max(200),
    warnAt: z.number().int().min(0).optional(),
    /** Text agents: the warning shown from `warnAt` on ({left} = rounds left). */
    warnText: z.string().max(400).optional(),
    forceSubmitAt: z.number().int().min(0).optional(),
  })
  .refine((b) => b.warnAt === undefined || b.warnAt < b.maxTurns, {
    message: "warnAt must be below maxTurns",
    path: ["warnAt"],
  })
  .refine((b) => b.forceSubmitAt === undefined || b.warnAt === undefined || b.forceSubmitAt <= b.warnAt, {
    message: "forceSubmitAt must not exceed warnAt (escalate soft before hard)",
    path: ["forceSubmitAt"],
  });
export type Budget = z.infer<typeof Budget>;

export const Provenance = z.object({
  direction: Direction,
  parent: z.string().nullable().default(null),
  hypothesis: z.string().default(""),
  motivatingTasks: z.array(z.string()).default([]),
  proposer: z.string().default("hand-written"),
});
export type Provenance = z.infer<typeof Provenance>;

/**
 * A harness: everything around the policy that shapes an episode, as data applied at fixed
 * hooks (task start, before a tool runs, after an observation, at submit, every step).
 *
 * @example
 * const h0 = parseHarnessSpec({ id: "h0", budget: { maxTurns: 10 }, provenance: { direction: "base" } });
 */
export const HarnessSpec = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9._/-]*$/, "use lower-case letters, digits, '.', '_', '-', '/'"),
  version: z.number().int().min(1).default(1),
  description: z.string().max(2000).default(""),
  instruction: z
    .object({
      systemAppend: z.string().max(4000).default(""),
      toolNotes: z.record(z.string(), z.string()).default({}),
      cues: z.array(Trigger).default([]),
    })
    .default({ systemAppend: "", toolNotes: {}, cues: [] }),
  recon: z
    .object({
      first: z.array(name).default([]),
      /** Text environments: named previews (e.g. "schema") put into the first observation. */
      preview: z.array(name).default([]),
    })
    .default({ first: [], preview: [] }),
  preAction: z.array(PreActionCheck).default([]),
  postObservation: z.array(Trigger).default([]),
  commitGate: CommitGate.nullable().default(null),
  budget: Budget,
  skills: z
    .object({ topK: z.number().int().min(0).max(10).default(2), entries: z.array(Trigger).default([]) })
    .default({ topK: 2, entries: [] }),
  provenance: Provenance,
});
export type HarnessSpec = z.infer<typeof HarnessSpec>;
export type HarnessSpecInput = z.input<typeof HarnessSpec>;

/** Parses a spec, throwing a {@link ValidationError} whose message lists every problem by path. */
export function parseHarnessSpec(input: unknown): HarnessSpec {
  const result = HarnessSpec.safeParse(input);
  if (!result.success) {
    const id = typeof input === "object" && input && "id" in input ? String((input as { id: unknown }).id) : "?";
    throw new ValidationError(`harness spec ${JSON.stringify(id)}`, formatIssues(result.error.issues));
  }
  return result.data;
}

/** True when `event` matches `pattern` (exact, or prefix when the pattern ends in `*`). */
export function matchesEvent(pattern: string, event: string): boolean {
  return pattern.endsWith("*") ? event.startsWith(pattern.slice(0, -1)) : pattern === event;
}

/**
 * A one-line summary of what a harness adds to a plain tool loop, read from its hooks.
 *
 * @example
 * describeHooks(spec); // "after error:401 hint login; gate submit on verified"
 */
export function describeHooks(spec: HarnessSpec): string {
  const parts = [
    ...spec.instruction.cues.map((t) => `cue ${t.hint} on ${t.on}`),
    ...(spec.recon.first.length ? [`first ${spec.recon.first.join(", ")}`] : []),
    ...(spec.recon.preview.length ? [`preview ${spec.recon.preview.join(", ")}`] : []),
    ...spec.preAction.map((c) => `${c.mode} ${c.action} until ${c.requires.join("+")}`),
    ...spec.postObservation.map((t) => `after ${t.on} hint ${t.hint}`),
    ...(spec.commitGate ? [`gate submit on ${spec.commitGate.requires.join("+")}`] : []),
    ...spec.skills.entries.map((t) => `skill ${t.hint} on ${t.on}`),
  ];
  const b = spec.budget;
  if (b.warnAt !== undefined || b.forceSubmitAt !== undefined)
    parts.push(`${b.maxTurns} turns, warn at ${b.warnAt ?? "-"}, force submit at ${b.forceSubmitAt ?? "-"}`);
  return parts.join("; ") || "no hooks";
}
