import { z } from "zod";

// The vocabulary a command-line flag is declared in, shared by the CLI's commands and the
// benchmark families that add flags to them: commander hands over strings, defaults may be numbers.

const numeric = (text: string) => (typeof text === "string" && text.trim() !== "" ? Number(text) : Number.NaN);
/** A number flag: the text must be a finite number (commander hands over strings; defaults may be numbers). */
export const num = (check: (n: z.ZodNumber) => z.ZodNumber = (n) => n) =>
  z
    .union([z.number(), z.string()])
    .transform((v, ctx) => {
      const n = typeof v === "number" ? v : numeric(v);
      if (!Number.isFinite(n)) {
        ctx.addIssue({ code: "custom", message: `not a number: ${JSON.stringify(v)}` });
        return z.NEVER;
      }
      return n;
    })
    .pipe(check(z.number()));
export const int = (min: number, max = Number.MAX_SAFE_INTEGER) => num((n) => n.int().min(min).max(max));
export const url = z.url({ error: (i) => `not a URL: ${JSON.stringify(i.input)}` });

/**
 * A flag's field: `schema` with its help and placeholder (`"<n>"`, `"[kinds]"`; null for a
 * switch); `choices` lists the values help shows where the schema checks them at parse time.
 *
 * @example
 * jobs: flag(int(1, 64).default(2), "<n>", "experiment processes at once")
 */
export const flag = <S extends z.ZodType>(
  schema: S,
  arg: string | null,
  description: string,
  extra: { negate?: boolean; choices?: readonly string[] } = {},
): S => schema.meta({ description, ...(arg ? { arg } : {}), ...extra });
