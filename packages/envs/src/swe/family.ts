import { z } from "zod";
import { givenPool } from "@harness-s/core/evolution";
import { flag, url } from "../flag-fields.ts";
import { startFixtureServer, type FixtureServer } from "../fixtures/launch.ts";
import {
  familyOptions,
  familyPool,
  registerFamily,
  workerOnlyBase,
  type OpenRequest,
  type OpenedFamily,
} from "../registry.ts";
import { SWE_SYSTEM, sweTools } from "./agent.ts";
import { SweGymEnvironment } from "./environment.ts";
import { sweObserver } from "./gateway-observer.ts";
import { sweH0, sweSiblings } from "./harnesses.ts";
import { SWE_FIXTURE_INSTANCES, readSweInstances, sweTaskSets } from "./instances.ts";
import { DeploymentServiceProvider } from "./sandbox.ts";

/** Where SWE-Gym runs (`experiment`, `eval` and `env-serve` take the same flags). */
export const sweFlags = () => ({
  sweInstances: flag(
    z.string().min(1).optional(),
    "<file>",
    "with --env swe-gym: SWE-bench-format instances (JSON lines); default the fixture repositories",
  ),
  sweDeployments: flag(
    url.optional(),
    "<url>",
    "with --env swe-gym: a deployment service starting one SWE-ReX runtime per instance; default the local fixture server",
  ),
  sweTestsBlocked: flag(
    z.boolean().optional(),
    null,
    "with --env swe-gym: refuse commands that run a test suite (the setting of the assertion-fallback behaviour)",
  ),
});

/**
 * SWE-Gym at the deployment service given, or at the local SWE-ReX-protocol server started here (stopped by `stop`).
 */
async function openSweGym(req: OpenRequest): Promise<OpenedFamily> {
  const o = familyOptions(sweFlags(), req);
  const started: FixtureServer[] = [];
  const stop = async () => void (await Promise.all(started.map((s) => s.stop())));
  try {
    let deployments = o.sweDeployments;
    if (!deployments) {
      const server = await startFixtureServer("swe/server.py", { python: await req.io.python() });
      started.push(server);
      deployments = server.url;
      req.io.log(
        `swe-gym: the local SWE-ReX-protocol server (fixture repositories, ${server.sandbox}) at ${deployments}`,
      );
    }
    const instances = await readSweInstances(o.sweInstances ?? SWE_FIXTURE_INSTANCES);
    const env = new SweGymEnvironment(instances, new DeploymentServiceProvider(deployments), {
      testsBlocked: o.sweTestsBlocked ?? false,
    });
    const pool = givenPool(familyPool(sweGym, "hand-written SWE siblings"));
    return { base: workerOnlyBase("SWE-Gym", env, sweTaskSets(instances), pool), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export const sweGym = registerFamily({
  name: "swe-gym",
  summary: "swe-gym (at a local fixture server unless --swe-deployments is given)",
  commands: ["experiment", "eval", "env-serve"],
  policy: "worker",
  system: SWE_SYSTEM,
  tools: sweTools,
  h0: sweH0,
  siblings: sweSiblings,
  flags: sweFlags,
  open: openSweGym,
  runKey: (req) => {
    const o = familyOptions(sweFlags(), req);
    return {
      remote: {
        kind: "swe-gym",
        instances: o.sweInstances,
        deployments: o.sweDeployments,
        testsBlocked: o.sweTestsBlocked ?? false,
      },
    };
  },
  gateway: async () => ({
    observerFor: sweObserver({ testsBlocked: false }),
    submitTool: "submit",
    defaultFamily: "swe",
  }),
});
