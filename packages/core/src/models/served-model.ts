import { z } from "zod";
import { Name } from "../names.ts";
import type { ExperimentOffers } from "../experiment/admit.ts";

/** What a served model costs a caller when its declaration names no price, per million tokens. */
export const MODEL_PRICE_DEFAULTS = { sampledUsd: 0.2, trainedUsd: 0.6 } as const;

/**
 * A base model the deployment's policy endpoint serves: every arm of an experiment that names it
 * trains its own LoRA adapter on it. Its size, context and chat template family are the worker's
 * reading of the model folder; its prices are the deployment's. Other fields of a declaration
 * (the stacks' `folder`) are dropped.
 */
export const ServedModel = z.object({
  name: Name,
  parameters: z.number().int().positive(),
  contextTokens: z.number().int().positive(),
  /** The family its chat template belongs to (`chatml`, `llama3`, `mistral`, `gemma`, or `other`). */
  chatTemplate: Name,
  pricePerMillionSampledUsd: z.number().min(0).default(MODEL_PRICE_DEFAULTS.sampledUsd),
  pricePerMillionTrainedUsd: z.number().min(0).default(MODEL_PRICE_DEFAULTS.trainedUsd),
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
export function listServedModels(offers: Pick<ServedOffers, "served"> | undefined): { models: ServedModel[] } {
  return { models: [...(offers?.served ?? [])] };
}
