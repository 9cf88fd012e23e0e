import { z } from "zod";
import { EvolutionConfig } from "@harness-s/core/evolution";
import { defaultEmbeddedSettings } from "@harness-s/envs";
import { declareCommand, flag } from "../declare.ts";
import { envFlagOr, familyFor, familyNames } from "../families.ts";
import { int, num, probability } from "../flags.ts";

const kebab = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
/** Each evolving family's own flags that have no default (given, they mean that family). */
const ownFlags = () =>
  familyNames("evolve").map((name) => ({
    name,
    keys: Object.entries(familyFor(name).evolve!.flags)
      .filter(([, field]) => (field as z.ZodType).safeParse(undefined).data === undefined)
      .map(([key]) => key),
  }));

/** The flags of every family's own evolution. */
const familyEvolveFlags = (): z.ZodRawShape =>
  Object.assign({}, ...familyNames("evolve").map((name) => familyFor(name).evolve!.flags));

const EvolveFlags = z
  .strictObject({
    out: flag(z.string().min(1).default("results/pool.json"), "<file>", "where to write the pool"),
    seed: flag(int(0).default(1), "<n>", "the suite instance (and evolution) seed"),
    cueStrength: flag(
      num((n) => n.min(0)).default(defaultEmbeddedSettings.cueStrength),
      "<b>",
      "the policy's fixed logit bonus for a hinted action",
    ),
    sideEffects: flag(
      probability.optional(),
      "<p>",
      "how often a sibling's edit misleads outside its area (see experiment)",
    ),
    poolSize: flag(
      int(1, 64).optional(),
      "<n>",
      `siblings to keep (default ${EvolutionConfig.parse({}).poolSize}; DBBench 6)`,
    ),
    protocol: flag(
      z.enum(["test", "validation"]).default("test"),
      "<p>",
      "test, or validation (the dev split without the held-back pair)",
    ),
    env: envFlagOr(
      "evolve",
      "embedded",
      familyNames("evolve")
        .map((name) => familyFor(name).evolve!.summary)
        .join(", or "),
    ),
    ...familyEvolveFlags(),
  })
  .superRefine((o, ctx) => {
    for (const { name, keys } of ownFlags()) {
      if (name !== o.env && keys.some((k) => (o as Record<string, unknown>)[k] !== undefined))
        ctx.addIssue({
          code: "custom",
          path: ["env"],
          message: `${keys
            .map(kebab)
            .join(", ")
            .replace(/, ([^,]*)$/, " and $1")} need --env ${name}`,
        });
    }
  });

export const evolve = declareCommand({
  name: "evolve",
  summary:
    "Evolve a sibling pool from H0 along the repair directions and save it (the embedded suite, or DBBench with an LLM proposer)",
  flags: EvolveFlags,
  run: async (o) => {
    const log = (line: string) => console.log(line);
    return familyFor(o.env, "evolve").evolve!.run(o, (await import("../family-io.ts")).cliIo(log));
  },
});
