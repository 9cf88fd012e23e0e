import { z } from "zod";
import { HarnessSError, formatIssues } from "@harness-s/core";
import { TrainConfig } from "@harness-s/core/training";
import { int, num, url } from "@harness-s/envs";
import { parseSeedList } from "./seeds.ts";

/**
 * Every command's flags are parsed by one strict zod schema, before any work starts: commander
 * only splits the command line (`--a b` and `--a=b` alike) into strings, the schema checks types,
 * ranges and unknown JSON keys, and a bad value is a {@link UsageError} (exit code 2, the flag
 * named) instead of a stack trace or a silent default.
 */
export class UsageError extends HarnessSError<"USAGE"> {
  constructor(message: string) {
    super("USAGE", message);
  }
}

export { int, num, url };
export const port = int(0, 65535);
export const probability = num((n) => n.min(0).max(1));
export const seeds = z.string().transform((v, ctx) => {
  try {
    return parseSeedList(v);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});

/** A JSON object flag, validated by `schema` (strict, so a misspelt or `__proto__` key is refused). */
export const jsonFlag = <S extends z.ZodType>(schema: S) =>
  z.string().transform((v, ctx): z.infer<S> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      ctx.addIssue({ code: "custom", message: `not valid JSON: ${v}` });
      return z.NEVER;
    }
    const checked = schema.safeParse(parsed);
    if (!checked.success) {
      for (const issue of formatIssues(checked.error.issues))
        ctx.addIssue({ code: "custom", message: issue.replace(/^\(root\): /, "") });
      return z.NEVER;
    }
    return checked.data;
  });

/** Overrides of the training config: any of its fields, nothing else. */
export const TrainOverrides = TrainConfig.partial().strict();

const flagName = (key: PropertyKey) => `--${String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/**
 * Parses commander's option values with `schema`; a failure names each bad flag and its value.
 *
 * @example
 * const o = parseFlags(ServeFlags, command.opts(), "serve");
 */
export function parseFlags<S extends z.ZodType>(schema: S, raw: Record<string, unknown>, command: string): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => {
    const key = issue.path[0];
    if (key === undefined) return issue.message;
    const value = raw[key as string];
    return `${flagName(key)}${value === undefined || typeof value === "boolean" ? "" : ` ${JSON.stringify(value)}`}: ${issue.message}`;
  });
  throw new UsageError(`${lines.join("; ")} (see harness-s ${command} --help)`);
}
