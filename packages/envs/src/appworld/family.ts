import { z } from "zod";
import { systemClock } from "@harness-s/core";
import { givenPool } from "@harness-s/core/evolution";
import { flag, int } from "../flag-fields.ts";
import { startFixtureServer, type FixtureServer } from "../fixtures/launch.ts";
import {
  familyOptions,
  familyPool,
  registerFamily,
  workerOnlyBase,
  type FamilyCommand,
  type OpenRequest,
  type OpenedFamily,
} from "../registry.ts";
import { APPWORLD_SYSTEM, appworldTools } from "./agent.ts";
import { AppWorldEnvironment } from "./environment.ts";
import { appworldObserver } from "./gateway-observer.ts";
import { appworldH0, appworldSiblings } from "./harnesses.ts";
import { AppWorldServerPool } from "./server-pool.ts";
import { APPWORLD_FIXTURE_TASKS, appworldTaskSets, readAppWorldTaskFile } from "./tasks.ts";

/**
 * Where AppWorld runs (`experiment`, `eval` and `env-serve` take the same flags; an experiment starts 4 local servers,
 * the others 2).
 */
export const appworldFlags = (command: FamilyCommand) => ({
  /** Comma-separated on the command line; a list as parsed (parsing twice gives the same). */
  appworldUrls: flag(
    z
      .union([z.array(z.string()), z.string().transform((v) => v.split(",").map((s) => s.trim()))])
      .pipe(z.array(z.string().url()).min(1).max(256))
      .optional(),
    "<list>",
    "with --env appworld: AppWorld environment servers (`appworld serve environment`, one live task each), comma-separated; default local fixture servers",
  ),
  appworldTasks: flag(
    z.string().min(1).optional(),
    "<file>",
    "with --env appworld: task ids per slot (JSON {train, dev, heldout, tags}); default the fixture tasks",
  ),
  appworldServers: flag(
    int(1, 64).default(command === "experiment" ? 4 : 2),
    "<n>",
    "with --env appworld and no --appworld-urls: local fixture servers to start",
  ),
});

/** AppWorld at the servers given, or at local fixture servers started here (stopped by `stop`). */
async function openAppWorld(req: OpenRequest): Promise<OpenedFamily> {
  const o = familyOptions(appworldFlags(req.command), req);
  const started: FixtureServer[] = [];
  const stop = async () => void (await Promise.all(started.map((s) => s.stop())));
  try {
    let urls = o.appworldUrls ?? [];
    if (!urls.length) {
      started.push(
        ...(await Promise.all(
          Array.from({ length: o.appworldServers }, () => startFixtureServer("appworld/server.py")),
        )),
      );
      urls = started.map((s) => s.url);
      req.io.log(
        `appworld: ${urls.length} local AppWorld-protocol servers at ${urls.join(", ")} (fixture tasks, ${started[0]!.sandbox})`,
      );
    }
    const sets = appworldTaskSets(
      o.appworldTasks ? await readAppWorldTaskFile(o.appworldTasks) : APPWORLD_FIXTURE_TASKS,
    );
    const env = new AppWorldEnvironment(new AppWorldServerPool(urls, systemClock), "harness-s");
    const pool = givenPool(familyPool(appworld, "hand-written AppWorld siblings"));
    return { base: workerOnlyBase("AppWorld", env, sets, pool), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export const appworld = registerFamily({
  name: "appworld",
  summary: "appworld (at local fixture servers unless --appworld-urls are given)",
  commands: ["experiment", "eval", "env-serve"],
  policy: "worker",
  system: APPWORLD_SYSTEM,
  tools: appworldTools,
  h0: appworldH0,
  siblings: appworldSiblings,
  flags: appworldFlags,
  open: openAppWorld,
  runKey: (req) => {
    const o = familyOptions(appworldFlags(req.command), req);
    return { remote: { kind: "appworld", urls: o.appworldUrls, tasks: o.appworldTasks, servers: o.appworldServers } };
  },
  gateway: async () => ({ observerFor: appworldObserver, submitTool: "complete_task", defaultFamily: "appworld" }),
});
