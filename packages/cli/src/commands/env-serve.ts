import { startOpenEnvServer, type OpenEnvServerOptions } from "@harness-s/adapters/openenv";
import { servedFrom, type ServedFamily } from "@harness-s/envs";
import { writeFile } from "node:fs/promises";
import { UsageError } from "../flags.ts";
import { cliIo } from "../family-io.ts";
import { familyFor } from "../families.ts";
import type { EnvServeOptions } from "../declared/serve-options.ts";

type BuiltinOpenEnv = OpenEnvServerOptions & Pick<ServedFamily, "shutdown" | "trainTasks">;

/**
 * A registered family's server parts (the embedded suite: seed 1's instance; DBBench: the bundled
 * dev and standard rows on SQLite or MariaDB; AppWorld and SWE-Gym: their tasks at the servers
 * given or local fixture servers started here and stopped on shutdown; any other: seed 0's
 * tasks), its tasks by id, its tools described as MCP tools.
 */
export async function builtinOpenEnv(
  opts: Pick<EnvServeOptions, "env"> & Partial<EnvServeOptions> & Readonly<Record<string, unknown>>,
  log: (line: string) => void = () => undefined,
): Promise<BuiltinOpenEnv> {
  const family = familyFor(opts.env, "env-serve");
  const req = { command: "env-serve" as const, options: opts, protocol: "test" as const, io: cliIo(log) };
  return family.serve ? family.serve(req) : servedFrom(family, await family.open(req));
}

/**
 * A family served over the OpenEnv protocol until `stop` (a WebSocket session per episode at
 * /ws; reset with `{"task_id": …}`, or with a seed alone to draw a training task); `--tasks-out`
 * first writes its training tasks as a rescue takes them.
 *
 * @example
 * const served = await startEnvServe(EnvServeOptions.parse({ env: "embedded", port: 0 }));
 */
export async function startEnvServe(
  opts: EnvServeOptions,
  log: (line: string) => void = (line) => console.error(line),
) {
  const parts = await builtinOpenEnv(opts, log);
  try {
    if (opts.tasksOut) {
      if (!parts.trainTasks)
        throw new UsageError(`--tasks-out: env-serve --env ${opts.env} does not write its tasks yet (embedded does)`);
      const tasks = parts.trainTasks();
      await writeFile(opts.tasksOut, `${JSON.stringify({ env: opts.env, tasks }, null, 1)}\n`);
      console.log(`wrote ${tasks.length} training tasks to ${opts.tasksOut}`);
    }
    const bounds = {
      sessionIdleSeconds: opts.sessionIdleSeconds,
      maxSessions: opts.maxSessions,
      maxSessionsPerAddress: opts.maxSessionsPerAddress,
    };
    const server = await startOpenEnvServer({ ...parts, ...bounds }, opts.port, opts.host);
    const stop = async () => {
      await server.close();
      await parts.shutdown();
    };
    return { url: server.url, stop };
  } catch (err) {
    await parts.shutdown();
    throw err;
  }
}

/**
 * `harness-s env-serve --env <family>`: a registered family's environment over the OpenEnv
 * protocol, so a trainer of your own can run it, and a rescue can name it as the caller's
 * environment. Ctrl-C stops it.
 */
export async function envServeCommand(opts: EnvServeOptions): Promise<void> {
  const server = await startEnvServe(opts);
  console.log(
    `harness-s env-serve (${opts.env}, OpenEnv protocol) on ${server.url}: WebSocket sessions at ${server.url.replace(/^http/, "ws")}/ws; Ctrl-C stops it`,
  );
  const stop = async () => {
    await server.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}
