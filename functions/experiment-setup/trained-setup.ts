import { NotConfiguredError, ValidationError } from "@harness-s/core";
import type { ExperimentDeps, ExperimentRecord } from "@harness-s/core/experiment";
import { emptyProfile } from "@harness-s/core/profile";
import type { FamilyRendering } from "@harness-s/envs";
import { workerPolicySetup, type UsageReport } from "./worker-setup.ts";

type Setup = Omit<ExperimentDeps, "onProgress">;

/** A base model a stack trains at a policy worker: its name, and the worker serving it (URL and bearer token). */
export interface ModelAtWorker {
  name: string;
  url: string;
  token?: string;
}

/**
 * The setup with a profile for every harness of each seed's pool from the start: a hand-written
 * pool's (none measured) start empty and fill with the run's training evidence, as the CLI's with
 * `--profile-budget 0`.
 */
export function withStartingProfiles(base: Setup): Setup {
  const instance = async (seed: number) => {
    const inst = await base.instance(seed);
    const { pool, initialProfiles } = inst.evolution;
    const missing = [pool.base, ...pool.siblings].filter((h) => !initialProfiles[h.id]);
    if (!missing.length) return inst;
    return {
      ...inst,
      evolution: {
        ...inst.evolution,
        initialProfiles: {
          ...initialProfiles,
          ...Object.fromEntries(missing.map((h) => [h.id, emptyProfile(h.id, 0)])),
        },
      },
    };
  };
  return { ...base, instance };
}

/**
 * The run's model among the served ones (default: the first); none served is NOT_CONFIGURED, another model a 400 naming
 * the served ones.
 */
export function modelOfRun(served: readonly ModelAtWorker[], asked: string | undefined): ModelAtWorker {
  if (!served.length) throw new NotConfiguredError("this stack trains no language model (it runs no policy worker)");
  const model = asked === undefined ? served[0]! : served.find((m) => m.name === asked);
  if (!model)
    throw new ValidationError("model", [`this stack serves ${served.map((m) => m.name).join(", ")}, not ${asked}`]);
  return model;
}

/**
 * A run's setup with its policies at a worker, the same for the local stack and the deployed
 * coordinator: the run's model (default the first served) on the environment's token rendering,
 * every harness of a hand-written pool starting with an empty profile.
 *
 * @example
 * const setup = trainedAtWorker(base, rendering, record, { served: [{ name: "tiny", url }] });
 */
export function trainedAtWorker(
  base: Setup,
  rendering: FamilyRendering,
  record: ExperimentRecord,
  opts: { served: readonly ModelAtWorker[]; meter?: UsageReport; run?: string },
): Setup {
  const model = modelOfRun(opts.served, record.request.model);
  return workerPolicySetup(
    withStartingProfiles(base),
    {
      url: model.url,
      ...(model.token ? { token: model.token } : {}),
      model: model.name,
      ...(opts.meter ? { onUsage: opts.meter } : {}),
      ...(opts.run ? { run: opts.run } : {}),
    },
    rendering,
  );
}
