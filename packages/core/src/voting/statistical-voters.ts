/* Invariants: see ./README.md. */
import { matchesEvent, type HarnessSpec } from "../harness/spec.ts";
import { smoothedRate, type Counts, type Profile } from "../profile/profile.ts";
import { rankByScore, type BallotRequest, type Voter } from "./ballot.ts";

const PRIOR_WEIGHT = 2;

function familyRate(p: Profile | undefined, family: string): number {
  return smoothedRate(p?.byFamily[family], 0.3, PRIOR_WEIGHT);
}

function pooled(counts: (Counts | undefined)[]): Counts {
  return counts.reduce<Counts>(
    (s, c) => ({ attempts: s.attempts + (c?.attempts ?? 0), successes: s.successes + (c?.successes ?? 0) }),
    { attempts: 0, successes: 0 },
  );
}

/**
 * Rescue evidence for the group's failure tags (or, for Rank-1, success on the task's tags),
 * shrunk toward the harness's family success rate.
 */
export const failureTagVoter: Voter = {
  id: "failure-tag-evidence",
  async vote(req: BallotRequest) {
    const scores: Record<string, number> = {};
    for (const c of req.candidates) {
      const p = req.profiles[c.id];
      const keys = req.failureTags.length ? req.failureTags : req.task.tags;
      const map = req.failureTags.length ? p?.byFailureTag : p?.byTaskTag;
      const evidence = pooled(keys.map((t) => map?.[`${req.task.family}/${t}`]));
      scores[c.id] = smoothedRate(evidence, familyRate(p, req.task.family), PRIOR_WEIGHT);
    }
    return rankByScore(this.id, scores);
  },
};

/** Success of each harness on tasks that share this task's visible tags, shrunk toward its family rate. */
export const taskTagVoter: Voter = {
  id: "task-tag-evidence",
  async vote(req: BallotRequest) {
    const scores: Record<string, number> = {};
    for (const c of req.candidates) {
      const p = req.profiles[c.id];
      const tags = req.task.tags.filter((t) => t !== req.task.family);
      const evidence = pooled(tags.map((t) => p?.byTaskTag[`${req.task.family}/${t}`]));
      scores[c.id] = smoothedRate(evidence, familyRate(p, req.task.family), PRIOR_WEIGHT);
    }
    return rankByScore(this.id, scores);
  },
};

/** Overall success of each harness on the task's family. */
export const familyVoter: Voter = {
  id: "family-evidence",
  async vote(req: BallotRequest) {
    const scores: Record<string, number> = {};
    for (const c of req.candidates) scores[c.id] = familyRate(req.profiles[c.id], req.task.family);
    return rankByScore(this.id, scores);
  },
};

/** How many of the failed group's events a spec has a hook for (read from the spec alone). */
export function specAffinity(spec: HarnessSpec, events: readonly string[]): number {
  const triggers = [...spec.postObservation, ...spec.instruction.cues, ...spec.skills.entries];
  let score = 0;
  events.forEach((event, i) => {
    const weight = 1 / (1 + i);
    if (triggers.some((t) => matchesEvent(t.on, event))) score += weight;
    if (event === "submit:rejected" && spec.commitGate) score += 0.5 * weight;
    if (event === "budget:exhausted" && spec.budget.forceSubmitAt !== undefined) score += 0.5 * weight;
    if (event.startsWith("error:") && spec.recon.first.length > 0) score += 0.25 * weight;
  });
  return score;
}

export const specAffinityVoter: Voter = {
  id: "spec-affinity",
  async vote(req: BallotRequest) {
    const scores: Record<string, number> = {};
    for (const c of req.candidates) scores[c.id] = specAffinity(c, req.failedEvents);
    return rankByScore(this.id, scores);
  },
};

/** Prefers harnesses that reach an outcome in fewer turns (cheaper rollouts). */
export const frugalityVoter: Voter = {
  id: "frugality",
  async vote(req: BallotRequest) {
    const scores: Record<string, number> = {};
    for (const c of req.candidates) {
      const t = req.profiles[c.id]?.turns;
      scores[c.id] = t && t.attempts > 0 ? -t.successes / t.attempts : -c.budget.maxTurns;
    }
    return rankByScore(this.id, scores);
  },
};

export const statisticalVoters: readonly Voter[] = [failureTagVoter, taskTagVoter, specAffinityVoter];

/** Every statistical voter, including frugality (cheap but biased toward harnesses that fail fast). */
export const allStatisticalVoters: readonly Voter[] = [failureTagVoter, taskTagVoter, specAffinityVoter, familyVoter, frugalityVoter];
