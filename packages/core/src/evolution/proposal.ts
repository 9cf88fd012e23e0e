import { z } from "zod";
import { formatIssues } from "../errors.ts";
import {
  CommitGate,
  type Direction,
  HarnessSpec,
  PreActionCheck,
  Trigger,
  type HarnessSpecInput,
} from "../harness/spec.ts";

/**
 * What an LLM proposer answers for one edit: the hypothesis, the dev tasks whose failures it
 * addresses (at least two), and the part of the spec it changes. Lists are appended to the
 * parent's; objects are merged over the parent's.
 */
export const HarnessPatch = z.object({
  hypothesis: z.string().min(1).max(1_000),
  evidence: z.array(z.string().min(1)).min(2, "an edit needs at least two tasks of evidence"),
  patch: z
    .object({
      instruction: z
        .object({
          systemAppend: z.string().max(4_000).optional(),
          toolNotes: z.record(z.string(), z.string().max(1_000)).optional(),
        })
        .strict()
        .optional(),
      recon: z
        .object({ first: z.array(z.string()).optional(), preview: z.array(z.string()).optional() })
        .strict()
        .optional(),
      preAction: z.array(PreActionCheck).max(8).optional(),
      postObservation: z.array(Trigger).max(12).optional(),
      commitGate: CommitGate.optional(),
      budget: z
        .object({
          maxTurns: z.number().int().min(1).max(200),
          warnAt: z.number().int().min(0).optional(),
          warnText: z.string().max(400).optional(),
        })
        .strict()
        .optional(),
      skills: z
        .object({ entries: z.array(Trigger).max(12) })
        .strict()
        .optional(),
    })
    .strict()
    .refine((p) => Object.keys(p).length > 0, "the patch changes nothing"),
});
export type HarnessPatch = z.infer<typeof HarnessPatch>;
export type PatchPart = keyof HarnessPatch["patch"];

/** The parts of a spec an edit along each direction may change (an edit elsewhere is refused). */
export const DIRECTION_PARTS: Record<Exclude<Direction, "base">, readonly PatchPart[]> = {
  contract: ["instruction", "commitGate", "postObservation"],
  recon: ["recon", "instruction"],
  "pre-action": ["preAction"],
  recovery: ["postObservation", "instruction"],
  "loop-breaking": ["postObservation"],
  verification: ["commitGate", "postObservation", "preAction"],
  budget: ["budget"],
  decomposition: ["instruction", "skills"],
};

/** Why a proposal was refused (counted in the evolution report). */
export const RefusalReason = z.enum(["invalid-json", "schema", "outside-direction", "evidence", "leak", "spec"]);
export type RefusalReason = z.infer<typeof RefusalReason>;

/**
 * What no hint may quote: the tasks' ids, answers, gold SQL and table values (an edit that quotes
 * one is fitted to a task, not a repair). Matched case-insensitively as whole words inside every
 * text of a patch ("back" is not found in "backticks"); values shorter than `minLength`, plain
 * small numbers and single words under five letters are not checked, so "id", "1" or "Male" are not leaks.
 *
 * @example
 * const leaks = new LeakIndex([{ taskId: "dev-3", secrets: ["Alice", "SELECT name FROM t"] }]);
 * leaks.find(["Answer with the name Alice"]); // { taskId: "dev-3", secret: "alice" }
 */
export class LeakIndex {
  private readonly entries: { taskId: string; secret: string; pattern: RegExp }[] = [];

  constructor(tasks: readonly { taskId: string; secrets: readonly string[] }[], minLength = 4) {
    const seen = new Set<string>();
    for (const t of tasks) {
      for (const s of [t.taskId, ...t.secrets]) {
        const norm = s.trim().toLowerCase();
        if (
          norm.length < minLength ||
          /^-?\d{1,3}(\.\d)?$/.test(norm) ||
          (/^[a-z]+$/.test(norm) && norm.length < 5) ||
          seen.has(`${t.taskId}\n${norm}`)
        )
          continue;
        seen.add(`${t.taskId}\n${norm}`);
        const escaped = norm.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        this.entries.push({
          taskId: t.taskId,
          secret: norm,
          pattern: new RegExp(`(^|[^\\p{L}\\p{N}])${escaped}($|[^\\p{L}\\p{N}])`, "u"),
        });
      }
    }
  }

  find(texts: readonly string[]): { taskId: string; secret: string } | undefined {
    const hay = texts.map((t) => t.toLowerCase());
    const hit = this.entries.find((e) => hay.some((h) => h.includes(e.secret) && e.pattern.test(h)));
    return hit && { taskId: hit.taskId, secret: hit.secret };
  }
}

/** Every string in a value (the texts a leak scan reads). */
function textsOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(textsOf);
  if (v && typeof v === "object") return Object.entries(v).flatMap(([k, x]) => [k, ...textsOf(x)]);
  return [];
}

export type ProposalCheck =
  | { ok: true; spec: HarnessSpec; evidence: string[] }
  | { ok: false; reason: RefusalReason; detail: string };

/**
 * Checks an LLM's proposal for an edit of `parent` along `direction` and builds the child spec:
 * the answer parsed (`answer` is the parsed JSON, or an Error when it was none), validated, kept
 * to the direction's parts, backed by two or more of the evidence tasks offered, free of leaks,
 * and a valid spec once merged. Pure: the proposer adapter only asks and counts.
 *
 * @example
 * const checked = checkProposal(json, { parent, direction: "recovery", evidenceIds, leaks, id: "llm-recovery-1", proposer: "gpt-4.1-mini" });
 */
export function checkProposal(
  answer: unknown,
  ctx: {
    parent: HarnessSpec;
    direction: Exclude<Direction, "base">;
    evidenceIds: readonly string[];
    leaks: LeakIndex;
    id: string;
    proposer: string;
  },
): ProposalCheck {
  if (answer instanceof Error) return { ok: false, reason: "invalid-json", detail: answer.message };
  const parsed = HarnessPatch.safeParse(answer);
  if (!parsed.success) {
    const evidenceOnly = parsed.error.issues.every((i) => i.path[0] === "evidence");
    return {
      ok: false,
      reason: evidenceOnly ? "evidence" : "schema",
      detail: formatIssues(parsed.error.issues).join("; "),
    };
  }
  const { hypothesis, evidence, patch } = parsed.data;
  const outside = (Object.keys(patch) as PatchPart[]).filter((p) => !DIRECTION_PARTS[ctx.direction].includes(p));
  if (outside.length)
    return {
      ok: false,
      reason: "outside-direction",
      detail: `a ${ctx.direction} edit may change ${DIRECTION_PARTS[ctx.direction].join(", ")}, not ${outside.join(", ")}`,
    };
  const offered = new Set(ctx.evidenceIds);
  const backed = [...new Set(evidence)].filter((id) => offered.has(id));
  if (backed.length < 2)
    return {
      ok: false,
      reason: "evidence",
      detail: `an edit needs two tasks of the evidence offered; it named ${backed.length} (${evidence.join(", ")})`,
    };
  const leak = ctx.leaks.find([...textsOf(patch), hypothesis]);
  if (leak)
    return { ok: false, reason: "leak", detail: `it quotes ${JSON.stringify(leak.secret)} of task ${leak.taskId}` };
  const p = ctx.parent;
  const merged: HarnessSpecInput = {
    ...p,
    id: ctx.id,
    instruction: {
      ...p.instruction,
      ...(patch.instruction?.systemAppend !== undefined
        ? { systemAppend: [p.instruction.systemAppend, patch.instruction.systemAppend].filter(Boolean).join("\n") }
        : {}),
      toolNotes: { ...p.instruction.toolNotes, ...patch.instruction?.toolNotes },
    },
    recon: {
      first: [...p.recon.first, ...(patch.recon?.first ?? [])],
      preview: [...new Set([...p.recon.preview, ...(patch.recon?.preview ?? [])])],
    },
    preAction: [...p.preAction, ...(patch.preAction ?? [])],
    postObservation: [...p.postObservation, ...(patch.postObservation ?? [])],
    commitGate: patch.commitGate ?? p.commitGate,
    budget: { ...p.budget, ...patch.budget },
    skills: { ...p.skills, entries: [...p.skills.entries, ...(patch.skills?.entries ?? [])] },
    provenance: { direction: ctx.direction, parent: p.id, hypothesis, motivatingTasks: backed, proposer: ctx.proposer },
  };
  const spec = HarnessSpec.safeParse(merged);
  if (!spec.success) return { ok: false, reason: "spec", detail: formatIssues(spec.error.issues).join("; ") };
  return { ok: true, spec: spec.data, evidence: backed };
}
