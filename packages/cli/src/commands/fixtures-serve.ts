import { startFixtureServer, type FixtureServer } from "@harness-s/envs";
import { ensureWorkerVenv } from "../policy-worker.ts";
import type { FixturesServeOptions } from "../declared/serve-options.ts";

/**
 * Starts the local protocol servers on loopback: `appworldServers` AppWorld-protocol servers (one
 * live task each; consecutive ports from `appworldPort` when it is not 0) and the SWE-ReX-protocol
 * server with its deployment step (pytest from the worker's venv). Prints their URLs as one JSON
 * line; stops them all on SIGINT/SIGTERM, or when one of them exits.
 */
export async function fixturesServeCommand(o: FixturesServeOptions): Promise<void> {
  const servers: FixtureServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  try {
    for (let i = 0; i < o.appworldServers; i++)
      servers.push(
        await startFixtureServer("appworld/server.py", {
          trusted: o.trustedFixturesOnly,
          port: o.appworldPort ? o.appworldPort + i : 0,
        }),
      );
    const swe = o.swe
      ? await startFixtureServer("swe/server.py", {
          trusted: o.trustedFixturesOnly,
          port: o.swePort,
          python: await ensureWorkerVenv(),
        })
      : undefined;
    if (swe) servers.push(swe);
    const appworld = servers.filter((s) => s !== swe).map((s) => s.url);
    console.log(JSON.stringify({ appworld, sweDeployments: swe?.url ?? null, sandbox: servers[0]?.sandbox ?? null }));
    console.error(
      [
        appworld.length
          ? `AppWorld-protocol servers: ${appworld.join(",")}  (experiment --env appworld --appworld-urls ${appworld.join(",")})`
          : "",
        swe ? `SWE-ReX-protocol deployments: ${swe.url}  (experiment --env swe-gym --swe-deployments ${swe.url})` : "",
        "Ctrl-C stops them.",
      ]
        .filter(Boolean)
        .join("\n"),
    );
  } catch (err) {
    await Promise.all(servers.map((s) => s.stop()));
    throw err;
  }
  await Promise.race(servers.map((s) => new Promise((r) => s.process.once("exit", r))));
  console.error("a fixture server exited; stopping the others");
  await stop();
}
