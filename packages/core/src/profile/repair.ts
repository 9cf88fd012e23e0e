import { Counts, MAX_PROFILE_KEYS, OTHER_KEY, Profile, emptyProfile } from "./profile.ts";

const MAPS = ["byFamily", "byTaskTag", "byFailureTag", "behaviours"] as const;

const validCounts = (c: unknown): c is Counts =>
  Counts.safeParse(c).success && (c as Counts).successes <= (c as Counts).attempts + 1e-9;

/**
 * A stored profile made valid again: entries whose counts are not finite, negative or more
 * successes than attempts are dropped (what an old, unguarded write of "constructor" or
 * "toString" left as NaN/null), "__proto__" keys are dropped, and each map is cut to
 * {@link MAX_PROFILE_KEYS} keys with the rest folded under {@link OTHER_KEY}. A valid profile
 * comes back unchanged, with nothing dropped.
 *
 * @example
 * const { profile, dropped } = repairProfile(JSON.parse(item.body), item.harnessId);
 */
export function repairProfile(raw: unknown, harnessId: string): { profile: Profile; dropped: string[] } {
  const parsed = Profile.safeParse(raw);
  if (parsed.success && MAPS.every((m) => Object.keys(parsed.data[m]).length <= MAX_PROFILE_KEYS + 1))
    return { profile: parsed.data, dropped: [] };
  const input = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  const int = (v: unknown) => (Number.isInteger(v) ? (v as number) : 0);
  const profile = emptyProfile(harnessId, Math.max(0, int(input.policyVersion)), Math.max(0, int(input.updatedAtStep)));
  const dropped: string[] = [];
  let folded = Number.isInteger(input.folded) && (input.folded as number) > 0 ? (input.folded as number) : 0;
  for (const m of MAPS) {
    const source = input[m] && typeof input[m] === "object" ? (input[m] as Record<string, unknown>) : {};
    const out: Record<string, Counts> = {};
    for (const key of Object.keys(source)) {
      const c = source[key];
      if (key === "__proto__" || !validCounts(c)) {
        dropped.push(`${m}.${key}`);
        continue;
      }
      const at =
        !Object.hasOwn(out, key) && key !== OTHER_KEY && Object.keys(out).length >= MAX_PROFILE_KEYS ? OTHER_KEY : key;
      if (at !== key) folded++;
      const prev = Object.hasOwn(out, at) ? out[at]! : { attempts: 0, successes: 0 };
      Object.defineProperty(out, at, {
        value: { attempts: prev.attempts + c.attempts, successes: prev.successes + c.successes },
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    profile[m] = out;
  }
  const turns = Counts.safeParse(input.turns);
  if (turns.success) profile.turns = turns.data;
  else dropped.push("turns");
  if (folded > 0) profile.folded = folded;
  return { profile, dropped };
}
