import { z } from "zod";
import type { Rollout } from "../rollout/types.ts";

export const Counts = z.object({ attempts: z.number().min(0), successes: z.number().min(0) });
export type Counts = z.infer<typeof Counts>;

/**
 * A harness behaviour profile under one policy version: success by task family and by
 * visible task tag, rescue success by the failure tag of the H0 group it was asked to rescue,
 * behaviour rates and cost. Counts are real-valued so that old evidence can be decayed.
 *
 * @example
 * let p = emptyProfile("sib-recovery-1", 0);
 * p = addEvidence(p, rollout, { rescueOf: ["unauthorized"] });
 */
export const Profile = z.object({
  harnessId: z.string(),
  policyVersion: z.number().int(),
  updatedAtStep: z.number().int(),
  byFamily: z.record(z.string(), Counts),
  byTaskTag: z.record(z.string(), Counts),
  byFailureTag: z.record(z.string(), Counts),
  behaviours: z.record(z.string(), Counts),
  turns: Counts,
  /** Evidence counted under {@link OTHER_KEY} because a map already held {@link MAX_PROFILE_KEYS} keys. */
  folded: z.number().int().min(0).optional(),
});
export type Profile = z.infer<typeof Profile>;

/** Most distinct keys one count map of a profile keeps; evidence for further keys is folded. */
export const MAX_PROFILE_KEYS = 128;
/** Where folded evidence is counted (no valid tag, family or behaviour name can be this). */
export const OTHER_KEY = "~other";

/**
 * The counts under `key`, only if `map` holds that key itself: a name such as "constructor" or
 * "toString" never reads `Object.prototype`.
 *
 * @example
 * countsAt(profile.byFamily, task.family); // undefined when the family has no evidence
 */
export function countsAt(map: Readonly<Record<string, Counts>> | undefined, key: string): Counts | undefined {
  return map !== undefined && Object.hasOwn(map, key) ? map[key] : undefined;
}

/** The profile of `harnessId` in `set`, own keys only (see {@link countsAt}). */
export function profileOf(set: Readonly<ProfileSet>, harnessId: string): Profile | undefined {
  return Object.hasOwn(set, harnessId) ? set[harnessId] : undefined;
}

/** Defines an own property, so that even "__proto__" is a plain key and never a prototype. */
function setOwn<T>(map: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
}

export function emptyProfile(harnessId: string, policyVersion: number, step = 0): Profile {
  return {
    harnessId,
    policyVersion,
    updatedAtStep: step,
    byFamily: {},
    byTaskTag: {},
    byFailureTag: {},
    behaviours: {},
    turns: { attempts: 0, successes: 0 },
  };
}

/** Adds one weighted outcome under `key`; a full map counts it under {@link OTHER_KEY}. Returns whether it folded. */
function bump(map: Record<string, Counts>, key: string, success: boolean, weight = 1): boolean {
  const fold = !Object.hasOwn(map, key) && Object.keys(map).length >= MAX_PROFILE_KEYS;
  const at = fold ? OTHER_KEY : key;
  const c = countsAt(map, at) ?? { attempts: 0, successes: 0 };
  setOwn(map, at, { attempts: c.attempts + weight, successes: c.successes + (success ? weight : 0) });
  return fold;
}

export interface EvidenceContext {
  /** Failure tags of the H0 group this rollout tried to rescue (empty for plain evidence). */
  rescueOf: readonly string[];
  taskTags?: readonly string[];
}

/** What a profile needs to know about one episode. */
export interface Outcome {
  family: string;
  success: boolean;
  turns: number;
  policyVersion: number;
  behaviours: Record<string, boolean>;
}

/** Returns a new profile with one outcome's evidence added. */
export function addOutcome(profile: Profile, o: Outcome, ctx: EvidenceContext): Profile {
  const next: Profile = structuredClone(profile);
  let folded = 0;
  const add = (map: Record<string, Counts>, key: string, success: boolean, weight?: number) => {
    if (bump(map, key, success, weight)) folded++;
  };
  add(next.byFamily, o.family, o.success);
  for (const tag of ctx.taskTags ?? []) add(next.byTaskTag, `${o.family}/${tag}`, o.success);
  const tags = [...new Set(ctx.rescueOf)];
  for (const tag of tags) add(next.byFailureTag, `${o.family}/${tag}`, o.success, 1 / tags.length);
  for (const [name, shown] of Object.entries(o.behaviours)) add(next.behaviours, name, shown);
  if (folded > 0) next.folded = (next.folded ?? 0) + folded;
  next.turns = { attempts: next.turns.attempts + 1, successes: next.turns.successes + o.turns };
  next.policyVersion = Math.max(next.policyVersion, o.policyVersion);
  return next;
}

/** Returns a new profile with one rollout's evidence added. */
export function addEvidence(profile: Profile, rollout: Rollout, ctx: EvidenceContext): Profile {
  return addOutcome(profile, { ...rollout, turns: rollout.steps.length }, ctx);
}

/**
 * Re-anchors `old` on `fresh`: for every key with fresh evidence, the old counts are scaled by
 * `keep` and the fresh ones added; keys the probe did not reach keep their old evidence, so a
 * small probe never erases what it could not re-measure.
 */
export function blendProfiles(old: Profile, fresh: Profile, keep: number): Profile {
  const blend = (o: Record<string, Counts>, f: Record<string, Counts>) => {
    const out = structuredClone(o);
    for (const [k, c] of Object.entries(f)) {
      if (c.attempts <= 0) continue;
      const prev = countsAt(out, k) ?? { attempts: 0, successes: 0 };
      setOwn(out, k, { attempts: prev.attempts * keep + c.attempts, successes: prev.successes * keep + c.successes });
    }
    return out;
  };
  const turns =
    fresh.turns.attempts > 0
      ? {
          attempts: old.turns.attempts * keep + fresh.turns.attempts,
          successes: old.turns.successes * keep + fresh.turns.successes,
        }
      : old.turns;
  const folded =
    old.folded !== undefined || fresh.folded !== undefined ? { folded: (old.folded ?? 0) + (fresh.folded ?? 0) } : {};
  return {
    harnessId: old.harnessId,
    policyVersion: fresh.policyVersion,
    updatedAtStep: fresh.updatedAtStep,
    byFamily: blend(old.byFamily, fresh.byFamily),
    byTaskTag: blend(old.byTaskTag, fresh.byTaskTag),
    byFailureTag: blend(old.byFailureTag, fresh.byFailureTag),
    behaviours: blend(old.behaviours, fresh.behaviours),
    turns,
    ...folded,
  };
}

/** Posterior mean of a Beta(prior·α, prior·(1−α)) updated with `c`. */
export function smoothedRate(c: Counts | undefined, priorMean: number, priorWeight: number): number {
  const attempts = c?.attempts ?? 0;
  const successes = c?.successes ?? 0;
  return (successes + priorMean * priorWeight) / (attempts + priorWeight);
}

/** Overall rescue utility: success rate over all rescue attempts recorded in the profile. */
export function rescueUtility(profile: Profile): number {
  let attempts = 0;
  let successes = 0;
  for (const c of Object.values(profile.byFailureTag)) {
    attempts += c.attempts;
    successes += c.successes;
  }
  return attempts === 0 ? 0 : successes / attempts;
}

export type ProfileSet = Record<string, Profile>;
