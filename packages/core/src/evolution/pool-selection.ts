import { addEvidence, emptyProfile, type ProfileSet } from "../profile/profile.ts";
import { failureSummary } from "../training/rescue.ts";
import type { Rollout } from "../rollout/types.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import type { Task } from "../task.ts";
import type { CandidateRecord, EvolutionConfig, EvolutionDeps, Measured } from "./evolution-types.ts";
import type { FailureEvidence, FailureSignal } from "./proposer.ts";

/** Each failed task once (its first failed rollout), quoted turn by turn for a proposer. */
export function failureEvidence(rollouts: readonly Rollout[], maxTasks = 12, maxTurns = 8): FailureEvidence[] {
  const seen = new Set<string>();
  const out: FailureEvidence[] = [];
  for (const r of rollouts) {
    if (r.success || seen.has(r.taskId) || out.length >= maxTasks) continue;
    seen.add(r.taskId);
    const excerpt = r.steps.slice(0, maxTurns).map((s) => {
      const args = s.args ? JSON.stringify(s.args).slice(0, 160) : "";
      const shown = (s.resultText ?? "").replace(/\s+/g, " ").slice(0, 160);
      return `${s.action}${args ? ` ${args}` : ""} → ${s.result}${shown ? `: ${shown}` : ""}`;
    });
    out.push({ taskId: r.taskId, family: r.family, failureTags: r.failureTags, excerpt });
  }
  return out;
}

export function failureSignals(rollouts: readonly Rollout[], vocabulary: EvolutionDeps["vocabulary"]): FailureSignal[] {
  const counts = new Map<string, FailureSignal>();
  const add = (r: Rollout, event: string, producedBy: string, weight: number) => {
    const key = `${r.family}|${event}|${producedBy}`;
    const v = vocabulary(r.family);
    const s = counts.get(key) ?? {
      family: r.family,
      event,
      producedBy,
      count: 0,
      tools: v.tools,
      facts: v.facts,
      roles: v.roles,
    };
    s.count += weight;
    counts.set(key, s);
  };
  for (const r of rollouts) {
    if (r.success) continue;
    add(r, "start", "", 0.25);
    const seen = new Set<string>();
    for (const step of r.steps) {
      if (step.result === "submitted" || seen.has(step.result)) continue;
      seen.add(step.result);
      add(r, step.result, step.action, 1);
    }
  }
  return [...counts.values()].sort((a, b) => b.count - a.count || (a.event < b.event ? -1 : 1));
}

/** Greedy max-coverage of H0's failures, at most `maxPerDirection` per direction. */
export function selectByCoverage<C extends CandidateRecord>(
  candidates: readonly C[],
  failures: readonly string[],
  config: EvolutionConfig,
): C[] {
  const target = new Set(failures);
  const covered = new Set<string>();
  const chosen: C[] = [];
  const perDirection = new Map<string, number>();
  while (chosen.length < config.poolSize) {
    let best: C | undefined;
    let bestGain = -1;
    for (const c of candidates) {
      if (chosen.includes(c) || (perDirection.get(c.spec.provenance.direction) ?? 0) >= config.maxPerDirection)
        continue;
      const gain = c.repairs.filter((t) => target.has(t) && !covered.has(t)).length;
      const key = gain * 1000 + c.score;
      if (key > bestGain) {
        bestGain = key;
        best = c;
      }
    }
    if (!best) break;
    chosen.push(best);
    perDirection.set(best.spec.provenance.direction, (perDirection.get(best.spec.provenance.direction) ?? 0) + 1);
    for (const t of best.repairs) covered.add(t);
  }
  return chosen;
}

export function profilesFrom(
  base: HarnessSpec,
  h0: Measured,
  siblings: readonly (readonly [HarnessSpec, Measured])[],
  tasks: readonly Task[],
): ProfileSet {
  const byTask = new Map(tasks.map((t) => [t.id, t]));
  const h0Tags = new Map<string, string[]>();
  for (const t of tasks) {
    const group = h0.rollouts.filter((r) => r.taskId === t.id);
    if (group.every((r) => !r.success)) h0Tags.set(t.id, failureSummary(group).tags);
  }
  const profiles: ProfileSet = {};
  for (const [spec, m] of [[base, h0] as const, ...siblings]) {
    let p = emptyProfile(spec.id, 0);
    for (const r of m.rollouts) {
      const rescueOf = spec.id === base.id ? [] : (h0Tags.get(r.taskId) ?? []);
      p = addEvidence(p, r, { rescueOf, taskTags: byTask.get(r.taskId)?.tags ?? [] });
    }
    profiles[spec.id] = p;
  }
  return profiles;
}
