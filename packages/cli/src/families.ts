import "@harness-s/functions/families";
import { FamilyName, familyFor, familyNames, type FamilyUse } from "@harness-s/envs";
import { flag } from "./declare.ts";

// The benchmark families as the CLI's commands take them: the built-in ones registered by
// functions/families.ts, each read from the registry (no command names one).

/** The registered families that support `use`, as help lists them (`dbbench (the fixed splits, …)`). */
export const familySummaries = (use: FamilyUse): string =>
  familyNames(use)
    .map((n) => familyFor(n).summary)
    .join("; ");

/** An `--env` flag: a registered family that supports `use`, checked when parsed (help lists those registered now). */
export const envFlag = (use: FamilyUse, description: string) =>
  flag(FamilyName(use), "<env>", description, { choices: familyNames(use) });

/** An `--env` flag with a default. */
export const envFlagOr = (use: FamilyUse, fallback: string, description: string) =>
  flag(FamilyName(use).default(fallback), "<env>", description, { choices: familyNames(use) });

/** The registered family of `name`, if any (a flag's own check reports an unknown one). */
export const registeredFamily = (name: string) => (familyNames().includes(name) ? familyFor(name) : undefined);

export { FamilyName, familyFor, familyNames };
