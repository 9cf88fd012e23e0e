import { z } from "zod";
import { ValidationError } from "../errors.ts";
import { ArmConfig, ArmUpdate, RescueMode } from "../training/arm-config.ts";

/**
 * What one experiment arm is: how its trainer treats an all-fail group, and what the experiment
 * measures of it. Everything the experiment does per arm is read from here.
 */
const ARM_NAME = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lower-case letters, digits and dashes");

export const ArmDefinition = z.object({
  name: ARM_NAME,
  /** What an all-fail group gets (see `RESCUE_MODES`). */
  rescue: RescueMode,
  /** Re-anchor the profiles during training (only modes that read profiles re-anchor). */
  reanchor: z.boolean().default(false),
  /** Every configured voter, or only the experiment's `singleVoter`. */
  voters: z.enum(["all", "single"]).default("all"),
  /**
   * "budget-source": this arm's rescue and re-anchoring rollouts, per seed, set the extra budget of
   * every "budget-matched" arm, which the experiment then requires and trains after it.
   */
  budget: z.enum(["own", "budget-source", "budget-matched"]).default("own"),
  /** Evaluate Rank-1 (the router's pick per held-out task) after training, and record sibling utilities from step 0. */
  rank1: z.boolean().default(false),
  /** Run when an experiment names no arms (arms added for one study are named where they run). */
  byDefault: z.boolean().default(true),
  /**
   * Update settings the arm sets over the experiment's training config (e.g. rescued rows in H0's context, corrected).
   */
  update: ArmUpdate.default({}),
});
export type ArmDefinition = z.infer<typeof ArmDefinition>;
export type ArmDefinitionInput = z.input<typeof ArmDefinition>;

const registry = new Map<string, ArmDefinition>();

/**
 * Adds an arm (as verl registers an advantage estimator); the name must be new.
 *
 * @example
 * registerArm({ name: "harness-s-k1", rescue: "router", reanchor: true, rank1: true });
 */
export function registerArm(input: ArmDefinitionInput): ArmDefinition {
  const def = ArmDefinition.parse(input);
  if (registry.has(def.name)) throw new ValidationError(`arm ${def.name}`, ["already registered"]);
  if (def.budget === "budget-source" && [...registry.values()].some((a) => a.budget === "budget-source")) {
    throw new ValidationError(`arm ${def.name}`, ["only one arm can be the budget source"]);
  }
  registry.set(def.name, def);
  return def;
}

/** Every registered arm's name, in registration order. */
export const armNames = (): string[] => [...registry.keys()];

/** The arms an experiment runs when it names none (see `byDefault`), in registration order. */
export const defaultArmNames = (): string[] => [...registry.values()].filter((a) => a.byDefault).map((a) => a.name);

/** A registered arm; an unknown name is a {@link ValidationError} listing the known ones. */
export function armDefinition(name: string): ArmDefinition {
  const def = registry.get(name);
  if (!def)
    throw new ValidationError("arm", [`unknown arm ${JSON.stringify(name)} (known arms: ${armNames().join(", ")})`]);
  return def;
}

/** An arm's name, checked against the registry when parsed. */
export const ArmName = ARM_NAME.superRefine((name, ctx) => {
  if (!registry.has(name))
    ctx.addIssue({
      code: "custom",
      message: `unknown arm ${JSON.stringify(name)} (known arms: ${armNames().join(", ")})`,
    });
}).meta({
  description:
    "a registered arm: grpo, grpo-budget, harness-s, harness-s-random, harness-s-noreanchor, harness-s-single-voter, harness-s-adaptive, harness-s-base-corrected, or one an operator registered",
});

/**
 * A run's arms: registered, each once, and a budget-matched arm only beside the budget source
 * whose extra rollouts it gets.
 */
export const ArmList = z
  .array(ArmName)
  .min(1)
  .superRefine((arms, ctx) => {
    if (new Set(arms).size !== arms.length) ctx.addIssue({ code: "custom", message: "an arm is listed twice" });
    const source = budgetSource()?.name;
    for (const name of arms) {
      if (registry.get(name)?.budget === "budget-matched" && (!source || !arms.includes(source))) {
        ctx.addIssue({
          code: "custom",
          message: `${name} gets ${source ?? "a budget source"}'s extra rollouts: run it with ${source ?? "one"}`,
        });
      }
    }
  });

/** The arms that set and take a matched budget: the source, if any, and the arms matched to it. */
export const budgetSource = (): ArmDefinition | undefined =>
  [...registry.values()].find((a) => a.budget === "budget-source");

/** The order a seed's arms train in: the budget source first, the rest as listed. */
export function runOrder(arms: readonly string[]): string[] {
  const source = budgetSource()?.name;
  return [...arms].sort((a, b) => (a === source ? -1 : b === source ? 1 : 0));
}

/**
 * The trainer configuration of an arm: `extra` is what the budget source spent beyond training on
 * this seed (used by budget-matched arms), `singleVoter` the voter of a single-voter arm.
 */
export function armConfig(name: string, extra: number, singleVoter: string): ArmConfig {
  const def = armDefinition(name);
  return ArmConfig.parse({
    name,
    rescue: def.rescue,
    reanchor: def.reanchor,
    update: def.update,
    ...(def.budget === "budget-matched" ? { extraBudget: extra } : {}),
    ...(def.voters === "single" ? { voters: [singleVoter] } : {}),
  });
}

/** The rollouts a trained budget-source arm spent beyond training (what budget-matched arms get). */
export const extraRolloutsOf = (breakdown: { rescue: number; reanchor: number }): number =>
  breakdown.rescue + breakdown.reanchor;

registerArm({ name: "grpo", rescue: "none" });
registerArm({ name: "grpo-budget", rescue: "resample-h0", budget: "budget-matched" });
registerArm({ name: "harness-s", rescue: "router", reanchor: true, budget: "budget-source", rank1: true });
registerArm({ name: "harness-s-random", rescue: "random", rank1: true });
registerArm({ name: "harness-s-noreanchor", rescue: "router", rank1: true });
registerArm({ name: "harness-s-single-voter", rescue: "router", reanchor: true, voters: "single", rank1: true });
registerArm({
  name: "harness-s-adaptive",
  rescue: "adaptive",
  reanchor: true,
  budget: "budget-matched",
  rank1: true,
  byDefault: false,
});
registerArm({
  name: "harness-s-base-corrected",
  rescue: "router",
  reanchor: true,
  rank1: true,
  byDefault: false,
  update: { rescueContext: "base", rescueCorrection: "truncated-is" },
});
