import { createPool } from "@harness-s/core";
import { givenPool } from "@harness-s/core/evolution";
import { statisticalVoters } from "@harness-s/core/voting";
import type { ExperimentDeps, SeedInstance } from "@harness-s/core/experiment";
import type { ToolBinding } from "@harness-s/core/gateway";
import { systemClock } from "@harness-s/core";
import {
  APPWORLD_FIXTURE_TASKS,
  APPWORLD_SYSTEM,
  AppWorldEnvironment,
  AppWorldServerPool,
  DeploymentServiceProvider,
  SWE_FIXTURE_INSTANCES,
  SWE_SYSTEM,
  SweGymEnvironment,
  appworldH0,
  appworldSiblings,
  appworldTaskSets,
  appworldTools,
  readAppWorldTaskFile,
  readSweInstances,
  startFixtureServer,
  sweH0,
  sweSiblings,
  sweTaskSets,
  sweTools,
  type FixtureServer,
} from "@harness-s/envs";
import { ensureWorkerVenv } from "./policy-worker.ts";
import type { TokenRendering } from "./worker-setup.ts";

/** AppWorld or SWE-Gym for an experiment: real servers when given, else the local fixture servers started here. */
export type RemoteEnvOptions =
  | { kind: "appworld"; urls?: readonly string[]; tasks?: string; servers: number }
  | { kind: "swe-gym"; instances?: string; deployments?: string; testsBlocked: boolean };

/** A tool list as a token rendering: the system text, the tools as JSON schemas, their names where they differ from the action. */
export function toolRendering(system: string, tools: readonly ToolBinding[]): TokenRendering {
  return {
    system,
    toolSchemas: (offered) =>
      tools.filter((t) => offered.includes(t.action)).map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } })),
    toolNames: Object.fromEntries(tools.filter((t) => t.name !== t.action).map((t) => [t.action, t.name])),
    env: (base) => base,
  };
}

const deps = (env: ExperimentDeps["env"], sets: Pick<SeedInstance, "train" | "dev" | "heldout">, pool: SeedInstance["evolution"]): Omit<ExperimentDeps, "onProgress"> => ({
  env,
  createPolicy: () => {
    throw new Error("AppWorld and SWE-Gym experiments train a worker's policy (--policy worker)");
  },
  voters: statisticalVoters,
  instance: async () => ({ ...sets, evolution: pool }),
});

/**
 * The environment, its rendering and its siblings' pool; `stop` ends the fixture servers it
 * started (none when URLs were given).
 *
 * @example
 * const remote = await openRemoteEnv({ kind: "swe-gym", testsBlocked: false }, log);
 */
export async function openRemoteEnv(
  opts: RemoteEnvOptions,
  log: (line: string) => void,
): Promise<{ base: Omit<ExperimentDeps, "onProgress">; rendering: TokenRendering; tools: readonly ToolBinding[]; stop: () => Promise<void> }> {
  const started: FixtureServer[] = [];
  const stop = async () => void (await Promise.all(started.map((s) => s.stop())));
  try {
    if (opts.kind === "appworld") {
      let urls = opts.urls ?? [];
      if (!urls.length) {
        started.push(...(await Promise.all(Array.from({ length: opts.servers }, () => startFixtureServer("appworld/server.py")))));
        urls = started.map((s) => s.url);
        log(`appworld: ${urls.length} local AppWorld-protocol servers at ${urls.join(", ")} (fixture tasks, ${started[0]!.sandbox})`);
      }
      const sets = appworldTaskSets(opts.tasks ? await readAppWorldTaskFile(opts.tasks) : APPWORLD_FIXTURE_TASKS);
      const env = new AppWorldEnvironment(new AppWorldServerPool(urls, systemClock), "harness-s");
      const pool = givenPool(createPool("appworld", appworldH0, appworldSiblings, { note: "hand-written AppWorld siblings" }));
      return { base: deps(env, sets, pool), rendering: toolRendering(APPWORLD_SYSTEM, appworldTools), tools: appworldTools, stop };
    }
    let url = opts.deployments;
    if (!url) {
      const server = await startFixtureServer("swe/server.py", { python: await ensureWorkerVenv(log) });
      started.push(server);
      url = server.url;
      log(`swe-gym: the local SWE-ReX-protocol server (fixture repositories, ${server.sandbox}) at ${url}`);
    }
    const instances = await readSweInstances(opts.instances ?? SWE_FIXTURE_INSTANCES);
    const env = new SweGymEnvironment(instances, new DeploymentServiceProvider(url), { testsBlocked: opts.testsBlocked });
    const pool = givenPool(createPool("swe-gym", sweH0, sweSiblings, { note: "hand-written SWE siblings" }));
    return { base: deps(env, sweTaskSets(instances), pool), rendering: toolRendering(SWE_SYSTEM, sweTools), tools: sweTools, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
