/* Invariants: see ./README.md. */
import { matchesEvent, type HarnessSpec } from "../harness/spec.ts";
import { countsAt, profileOf, smoothedRate, type Counts, type Profile } from "../profile/profile.ts";
import { rankByScore, type BallotRequest, type Voter } from "./ballot.ts";

const PRIOR_WEIGHT = 2;

function familyRate(p: Profile | undefined, family: string): number {
  return smoothedRate(countsAt(p?.byFamily, family), 0.3, PRIOR_WEIGHT);
}

function pooled(counts: (Counts | undefined)[]): Counts {
  return counts.reduce<Counts>(
    (s, c) => ({ attempts: s.attempts + (c?.attempts ?? 0), successes: s.successes + (c?.successes ?? 0) }),
    { attempts: 0, successes: 0 },
  );
}

/**
 * A voter that scores each candidate independently and ranks by score (ties by id).
 *
 * @example
 * const cheap = scoringVoter("cheap", (c) => -c.budget.maxTurns);
 */
export function scoringVoter(
  id: string,
  score: (candidate: HarnessSpec, profile: Profile | undefined, req: BallotRequest) => number,
): Voter {
  return {
    id,
    async vote(req: BallotRequest) {
      const scores: Record<string, number> = {};
      for (const c of req.candidates) scores[c.id] = score(c, profileOf(req.profiles, c.id), req);
      return rankByScore(id, scores);
    },
  };
}

/**
 * Rescue evidence for the group's failure tags (or, for Rank-1, success on the task's tags),
 * shrunk toward the harness's family success rate.
 */
export const failureTagVoter = scoringVoter("failure-tag-evidence", (_c, p, req) => {
  const keys = req.failureTags.length ? req.failureTags : req.task.tags;
  const map = req.failureTags.length ? p?.byFailureTag : p?.byTaskTag;
  const evidence = pooled(keys.map((t) => countsAt(map, `${req.task.family}/${t}`)));
  return smoothedRate(evidence, familyRate(p, req.task.family), PRIOR_WEIGHT);
});

/** Success on tasks that share this task's visible tags, shrunk toward the family rate. */
export const taskTagVoter = scoringVoter("task-tag-evidence", (_c, p, req) => {
  const tags = req.task.tags.filter((t) => t !== req.task.family);
  const evidence = pooled(tags.map((t) => countsAt(p?.byTaskTag, `${req.task.family}/${t}`)));
  return smoothedRate(evidence, familyRate(p, req.task.family), PRIOR_WEIGHT);
});

/** Overall success of each harness on the task's family. */
export const familyVoter = scoringVoter("family-evidence", (_c, p, req) => familyRate(p, req.task.family));

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

export const specAffinityVoter = scoringVoter("spec-affinity", (c, _p, req) => specAffinity(c, req.failedEvents));

/** Prefers harnesses that reach an outcome in fewer turns (cheap, but biased toward failing fast). */
export const frugalityVoter = scoringVoter("frugality", (c, p) =>
  p && p.turns.attempts > 0 ? -p.turns.successes / p.turns.attempts : -c.budget.maxTurns,
);

/** The default vote: three voters that look at different evidence. */
export const statisticalVoters: readonly Voter[] = [failureTagVoter, taskTagVoter, specAffinityVoter];

/** Every statistical voter, including family and frugality (measured to dilute the vote here). */
export const allStatisticalVoters: readonly Voter[] = [
  failureTagVoter,
  taskTagVoter,
  specAffinityVoter,
  familyVoter,
  frugalityVoter,
];
