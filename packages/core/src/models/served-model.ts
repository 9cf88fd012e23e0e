import { z } from "zod";
import { Name } from "../names.ts";
import { EMBEDDED_ONLY, type ExperimentOffers } from "../experiment/admit.ts";

/**
 * A base model the deployment's policy endpoint serves: every arm of an experiment that names it
 * trains its own LoRA adapter on it. Its size, context and chat template family are the worker's
 * reading of the model folder. It lists no per-token price: a run is charged at the tariff (rollouts,
 * compute seconds) and its GPU seconds and other goods passed through at no less than cost
 * (`chargeUsd`), whatever the model. Other fields of a declaration (the stacks' `folder`, a price
 * from before) are dropped.
 */
export const ServedModel = z.object({
  name: Name,
  parameters: z.number().int().positive(),
  contextTokens: z.number().int().positive(),
  /** The family its chat template belongs to (`chatml`, `llama3`, `mistral`, `gemma`, or `other`). */
  chatTemplate: Name,
  /**
   * Device seconds per generated token, as the operator declares it for the hardware serving it: what quotes price
   * this model's GPU seconds at before one of its runs finishes here (then its measured rate).
   */
  secondsPerToken: z.number().positive().max(10).optional(),
});
export type ServedModel = z.infer<typeof ServedModel>;

/** The models a deployment serves, each name once. */
export const ServedModels = z.array(ServedModel).superRefine((models, ctx) => {
  const seen = new Set<string>();
  for (const m of models) {
    if (seen.has(m.name)) ctx.addIssue({ code: "custom", message: `model ${m.name} is declared twice` });
    seen.add(m.name);
  }
});

/** What a deployment offers experiments, with the models it serves in full (`GET /v1/models`); `models` names them. */
export interface ServedOffers extends ExperimentOffers {
  served: readonly ServedModel[];
}

/**
 * The offers of a deployment that serves `models`: `base`'s environments, the models by name.
 *
 * @example
 * servedOffers([tiny]).models; // ["tiny"]
 */
export function servedOffers(models: readonly ServedModel[], base: Omit<ExperimentOffers, "models">): ServedOffers {
  return { ...base, models: models.map((m) => m.name), served: models };
}

/** `GET /v1/models`: the base models this deployment serves, in the order it declares them. */
export function listServedModels(offers: ServedOffers | undefined): {
  models: ServedModel[];
  environments: string[];
  callerEnvironments: boolean;
} {
  return {
    models: [...(offers?.served ?? [])],
    environments: [...(offers?.envs ?? EMBEDDED_ONLY.envs)],
    callerEnvironments: offers?.callerEnvironments ?? EMBEDDED_ONLY.callerEnvironments,
  };
}
