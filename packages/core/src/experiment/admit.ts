import { NotConfiguredError, NotFoundError, ValidationError, parseOrThrow } from "../errors.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import type { CallerPolicies } from "../dispatch/rollout-source.ts";
import { TrainConfig } from "../training/config.ts";
import type { ExperimentPlan } from "./records.ts";
import { envName } from "./environment.ts";

/** The environments and base models a deployment runs experiments on. */
export interface ExperimentOffers {
  envs: readonly string[];
  callerEnvironments: boolean;
  models: readonly string[];
}

export const EMBEDDED_ONLY: ExperimentOffers = { envs: ["embedded"], callerEnvironments: false, models: [] };

/** A 400 naming what is offered when a request asks for an environment or a model this deployment does not run. */
export function ensureOffered(
  req: Pick<ExperimentPlan, "env" | "model">,
  offers: ExperimentOffers = EMBEDDED_ONLY,
): void {
  const env = envName(req.env);
  if (typeof req.env === "string" ? !offers.envs.includes(env) : !offers.callerEnvironments)
    throw new ValidationError("env", [
      `this deployment runs experiments on ${[...offers.envs, ...(offers.callerEnvironments ? ["a caller's openenv server"] : [])].join(", ")}, not ${env}`,
    ]);
  if (req.model !== undefined && !offers.models.includes(req.model))
    throw new ValidationError("model", [
      offers.models.length
        ? `this deployment serves ${offers.models.join(", ")}, not ${req.model}`
        : `this deployment serves no base model (${req.model} asked): leave model out`,
    ]);
}

/**
 * What admitting an experiment reads: what the deployment offers, the outbound guard (through the callers' policies)
 * and the key's pools.
 */
export interface AdmitExperimentDeps {
  offers?: ExperimentOffers;
  callers?: CallerPolicies;
  /** None: no pool can be named (a `poolId` is a 404). */
  pools?: Pick<PoolStore, "get">;
}

/**
 * Every check an experiment request must pass before anything is recorded, metered or quoted, the
 * same for `POST /v1/experiments` and `POST /v1/quotes`: its environment and model offered here,
 * its training config, and for a caller's own environment its URL through the outbound guard,
 * its tasks' committing tools under one name and the pool it names the key's own.
 *
 * @example
 * await admitExperiment(req, key.id, deps); // then quote or start it
 */
export async function admitExperiment(req: ExperimentPlan, keyId: string, deps: AdmitExperimentDeps): Promise<void> {
  ensureOffered(req, deps.offers);
  parseOrThrow(TrainConfig, req.train, "train");
  const env = req.env;
  if (typeof env === "string") return;
  if (!deps.callers) throw new NotConfiguredError("experiments on a caller's environment are not deployed here");
  await deps.callers.checkEnvironment({
    kind: "openenv",
    url: env.url,
    ...(env.secretHeader ? { secretHeader: env.secretHeader } : {}),
  });
  const submits = new Set(env.tasks.map((t) => t.tools.find((tool) => tool.submit)!.name));
  if (submits.size > 1)
    throw new ValidationError("env.tasks", [
      `every task's committing tool must have one name; these have ${[...submits].join(", ")}`,
    ]);
  if (env.poolId !== undefined && (await deps.pools?.get(env.poolId))?.owner !== keyId)
    throw new NotFoundError("pool", env.poolId);
}
