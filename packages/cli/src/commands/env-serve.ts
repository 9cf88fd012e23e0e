import { startOpenEnvServer, type OpenEnvServerOptions } from "@harness-s/adapters";
import { BUNDLED_DATA_DIR, DbBenchEnvironment, dbbenchTools, loadSplit, readSplits, rowTask } from "@harness-s/dbbench";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetup, embeddedToolSchemas } from "@harness-s/envs";
import { writeFile } from "node:fs/promises";
import type { CallerTask } from "@harness-s/core/rescue";
import type { Environment, Task } from "@harness-s/core";
import { UsageError } from "../flags.ts";
import { remoteEnvOf } from "../remote-env-flags.ts";
import { openRemoteEnv } from "../remote-envs-setup.ts";
import { openEngine } from "./dbbench.ts";
import type { EnvServeOptions } from "../declared/serve-options.ts";

/** An embedded task as a caller's rescue carries it: its text, tags and tools (`submit` the committing one). */
export function embeddedCallerTask(env: Pick<Environment, "tools">, task: Task): CallerTask {
  const tools = embeddedToolSchemas(env.tools(task)).map(({ function: f }) => ({
    name: f.name,
    description: f.description,
    parameters: f.parameters,
    submit: f.name === "submit",
  }));
  return { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction, tools, reset: {} };
}

type BuiltinOpenEnv = OpenEnvServerOptions & { shutdown: () => Promise<void>; trainTasks?: () => CallerTask[] };

/**
 * A built-in environment's server parts: the embedded suite (seed 1's instance: its train, dev
 * and held-out tasks by id; events and facts as text), DBBench (the bundled dev and standard
 * rows by id, on SQLite or MariaDB), or AppWorld and SWE-Gym (their tasks by id, at the servers
 * given or local fixture servers started here and stopped on shutdown), with their tools
 * described as MCP tools.
 */
export async function builtinOpenEnv(
  opts: Pick<EnvServeOptions, "env" | "engine" | "mysqlUrl"> & Partial<EnvServeOptions>,
  log: (line: string) => void = () => undefined,
): Promise<BuiltinOpenEnv> {
  const remote = remoteEnvOf(opts.env, { appworldServers: 2, ...opts });
  if (remote) return remoteOpenEnv(await openRemoteEnv(remote, log));
  if (opts.env === "embedded") {
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const instance = await setup.instance(1);
    const byId = new Map([...instance.train, ...instance.dev, ...instance.heldout].map((t) => [t.id, t]));
    return {
      trainTasks: () => instance.train.map((t) => embeddedCallerTask(setup.env, t)),
      resetTasks: instance.train.map((t) => t.id),
      env: new TextEnvironment(setup.env),
      tasks: { get: async (id) => byId.get(id) },
      describeTools: (actions) => embeddedToolSchemas(actions).map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters })),
      submit: "submit",
      shutdown: async () => undefined,
    };
  }
  const rows = [...(await loadSplit(BUNDLED_DATA_DIR, "dev")), ...(await loadSplit(BUNDLED_DATA_DIR, "standard"))];
  const byId = new Map(rows.map((r) => [r.id, rowTask(r)]));
  const { train } = await readSplits(BUNDLED_DATA_DIR);
  const engine = await openEngine({ engine: opts.engine, mysqlUrl: opts.mysqlUrl });
  const byAction = new Map(dbbenchTools.map((t) => [t.action, t]));
  return {
    env: new DbBenchEnvironment(rows, engine),
    tasks: { get: async (id) => byId.get(id) },
    resetTasks: train,
    describeTools: (actions) => actions.map((a) => ({ name: a, description: byAction.get(a)?.description ?? "", input_schema: byAction.get(a)?.parameters ?? {} })),
    submit: "submit",
    shutdown: () => engine.shutdown(),
  };
}

/** AppWorld or SWE-Gym served: its tasks by id, its tools by action (`submit` ends the episode) with its agent's descriptions. */
async function remoteOpenEnv(remote: Awaited<ReturnType<typeof openRemoteEnv>>): Promise<BuiltinOpenEnv> {
  const sets = await remote.base.instance(0);
  const byId = new Map([...sets.train, ...sets.dev, ...sets.heldout].map((t) => [t.id, t]));
  const schemaOf = (action: string) => remote.rendering.toolSchemas([action])[0]?.function;
  return {
    env: remote.base.env,
    tasks: { get: async (id) => byId.get(id) },
    resetTasks: sets.train.map((t) => t.id),
    describeTools: (actions) => actions.map((a) => ({ name: a, description: schemaOf(a)?.description ?? "", input_schema: schemaOf(a)?.parameters ?? {} })),
    submit: "submit",
    shutdown: remote.stop,
  };
}

/**
 * `harness-s env-serve --env embedded|dbbench|appworld|swe-gym`: a built-in environment over the OpenEnv protocol
 * (a WebSocket session per episode at /ws; reset with `{"task_id": …}`, or with a seed alone to
 * draw a training task), so a trainer of your own can run it, and a rescue can name it as the
 * caller's environment. Ctrl-C stops it.
 */
export async function envServeCommand(opts: EnvServeOptions): Promise<void> {
  const parts = await builtinOpenEnv(opts, (line) => console.error(line));
  if (opts.tasksOut) {
    if (!parts.trainTasks) throw new UsageError(`--tasks-out: env-serve --env ${opts.env} does not write its tasks yet (embedded does)`);
    const tasks = parts.trainTasks();
    await writeFile(opts.tasksOut, `${JSON.stringify({ env: opts.env, tasks }, null, 1)}\n`);
    console.log(`wrote ${tasks.length} training tasks to ${opts.tasksOut}`);
  }
  const bounds = { sessionIdleSeconds: opts.sessionIdleSeconds, maxSessions: opts.maxSessions, maxSessionsPerAddress: opts.maxSessionsPerAddress };
  const server = await startOpenEnvServer({ ...parts, ...bounds }, opts.port, opts.host);
  console.log(`harness-s env-serve (${opts.env}, OpenEnv protocol) on ${server.url}: WebSocket sessions at ${server.url.replace(/^http/, "ws")}/ws; Ctrl-C stops it`);
  const stop = async () => {
    await server.close();
    await parts.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}
