import { type Command, Option } from "commander";
import { z } from "zod";
import { parseFlags } from "./flags.ts";

/**
 * A command as data: its name (`"suite-lm build"` for a subcommand), a summary, its positional
 * arguments, one zod schema of its flags and what it runs. Each flag's description and
 * placeholder sit on its field (`flag`), its default and bounds in the field's schema; the
 * program builds commander's options from them, so a flag is declared in one place.
 */
export interface CommandDeclaration<S extends z.ZodObject = z.ZodObject> {
  readonly name: string;
  readonly summary: string;
  readonly args?: readonly { readonly name: string; readonly description: string }[];
  readonly flags: S;
  /**
   * Runs with the parsed flags and the positional arguments (loading its implementation only now, so help answers at
   * once).
   */
  readonly run: (flags: z.infer<S>, args: string[]) => Promise<unknown>;
}

/** Declares a command (the identity, typed: `run` sees the schema's parsed flags). */
export const declareCommand = <S extends z.ZodObject>(declaration: CommandDeclaration<S>): CommandDeclaration<S> =>
  declaration;

/**
 * What `flag` records on a field: the help line, the value's placeholder, `--no-<name>` for a flag that defaults on,
 * the values help lists.
 */
interface FlagMeta {
  description: string;
  arg?: string;
  negate?: boolean;
  choices?: readonly string[];
}

/** A flag's field (declared beside the benchmark families', which add flags to commands). */
export { flag } from "@harness-s/envs";

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const unwrapped = (schema: z.ZodType): z.ZodType =>
  schema instanceof z.ZodOptional || schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault
    ? unwrapped(schema.unwrap() as z.ZodType)
    : schema;

/** The default a field shows in help (its `.default()` or `.prefault()`), if any. */
const defaultOf = (schema: z.ZodType): unknown =>
  schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault
    ? (schema._zod.def as { defaultValue: unknown }).defaultValue
    : undefined;

/** The commander option of one field of a declaration's schema. */
export function optionOf(key: string, field: z.ZodType): Option {
  const meta = z.globalRegistry.get(field) as FlagMeta | undefined;
  if (!meta?.description) throw new Error(`flag ${key}: no description (declare it with flag())`);
  const inner = unwrapped(field);
  const isSwitch = inner instanceof z.ZodBoolean;
  if (!isSwitch && !meta.arg) throw new Error(`flag ${key}: a value flag needs a placeholder`);
  const option = new Option(
    `--${meta.negate ? "no-" : ""}${kebab(key)}${isSwitch ? "" : ` ${meta.arg}`}`,
    meta.description,
  );
  if (inner instanceof z.ZodEnum) option.choices(inner.options.map(String));
  else if (meta.choices) option.choices([...meta.choices]);
  // An array field is a repeatable flag: each use adds one value.
  if (inner instanceof z.ZodArray)
    option.argParser((value: string, earlier: string[] | undefined) => [...(earlier ?? []), value]);
  const fallback = defaultOf(field);
  if (fallback !== undefined && !meta.negate && !(inner instanceof z.ZodArray)) option.default(fallback);
  if (!isSwitch && fallback === undefined && !field.safeParse(undefined).success) option.makeOptionMandatory();
  return option;
}

/**
 * Adds `declaration` to `parent` (its last word as the name): commander splits the command line,
 * the declaration's schema parses what the user gave (defaults shown in help are the schema's own,
 * applied by the schema), and a bad value is a usage error naming the flag.
 */
export function addDeclared(parent: Command, declaration: CommandDeclaration): Command {
  const command = parent.command(declaration.name.split(" ").at(-1)!).description(declaration.summary);
  for (const a of declaration.args ?? []) command.argument(a.name, a.description);
  for (const [key, field] of Object.entries(declaration.flags.shape))
    command.addOption(optionOf(key, field as z.ZodType));
  command.action(async (...params: unknown[]) => {
    const given = Object.fromEntries(
      Object.entries(command.opts()).filter(([key]) => command.getOptionValueSource(key) !== "default"),
    );
    const flags = parseFlags(declaration.flags, given, declaration.name);
    const args = params.slice(0, declaration.args?.length ?? 0).flat() as string[];
    await declaration.run(flags, args);
  });
  return command;
}
