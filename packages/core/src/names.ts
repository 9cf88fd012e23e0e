import { z } from "zod";

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:@/+=-]*$/;
const charset = "start with a letter or digit; then letters, digits and _ . : @ / + = -";

/**
 * A family, tag or behaviour name that callers send and profiles count: short, one charset, so a
 * name can never be "__proto__", an empty string or a megabyte of text.
 *
 * @example
 * Name.parse("incomplete-results");
 */
export const Name = z.string().min(1).max(100).regex(NAME, charset);

/** An id a caller sends (pool, task, harness, outcome, path parameter): at most 200 characters, one charset. */
export const Id = z.string().min(1).max(200).regex(NAME, charset);

/**
 * At most `max` keys, each a {@link Name}. An own `__proto__` key (JSON.parse makes one) is
 * refused like any other non-name: zod's record would otherwise drop it without a word.
 */
export function nameRecord<V extends z.ZodType>(value: V, max: number) {
  return z
    .unknown()
    .superRefine((input, ctx) => {
      if (input !== null && typeof input === "object" && Object.hasOwn(input, "__proto__"))
        ctx.addIssue({ code: "custom", path: ["__proto__"], message: `"__proto__" is not a name (${charset})` });
    })
    .pipe(z.record(Name, value).refine((r) => Object.keys(r).length <= max, { message: `at most ${max} keys` }));
}

/**
 * The kinds of id the service mints (`<kind>_…`: routing decisions, experiments, pool evolutions,
 * keys, rescues). A caller may not name its own record with one: a pool registered as `pev_…`
 * would squat the pool an evolution of that id stores.
 */
export const MINTED_ID_KINDS = ["dec", "exp", "pev", "key", "rsc"] as const;

/** The kind of minted id `id` is spelled as, if any (`pev_1/x` → `pev`). */
export const mintedKindOf = (id: string): (typeof MINTED_ID_KINDS)[number] | undefined =>
  MINTED_ID_KINDS.find((k) => id.startsWith(`${k}_`));
