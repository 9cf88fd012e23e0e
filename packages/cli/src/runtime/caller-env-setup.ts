import { NotConfiguredError } from "@harness-s/core";
import type { CallerExperimentEnv, ExperimentRecord } from "@harness-s/core/experiment";
import type { OpenedFamily } from "@harness-s/envs";

/**
 * An experiment's setup on the caller's own OpenEnv server, its tasks posted as data: the pool it
 * names (one the key evolved on its dev split) or one evolved first on that split, frozen and
 * stored with the run; train, dev and held-out from the tasks' splits.
 */
export async function callerEnvSetup(env: CallerExperimentEnv, record: ExperimentRecord): Promise<OpenedFamily> {
  void env;
  void record;
  throw new NotConfiguredError("experiments on a caller's own environment are not built yet");
}
