import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import type { z } from "zod";
import { createPool, type PoolStore } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import type { ProfileStore } from "@harness-s/core/profile";
import { hashSecret } from "@harness-s/core/access";
import { servedOffers } from "@harness-s/core/models";
import { jsonLinesLogger } from "@harness-s/core/observability";
import { gatewaySettings } from "@harness-s/functions/api";
import { panelRouting, readPanelDocument } from "../panel-file.ts";
import { bodyLimitOf, createApp } from "@harness-s/functions/api";
import { listen } from "@harness-s/functions/api";
import { CONSOLE_DIST, loadConsoleAssets } from "@harness-s/functions/api";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import { startLocalStack } from "@harness-s/functions/local";
import { UsageError } from "../flags.ts";
import { SERVE_WORKERS, type ServeWorkersData } from "../runtime/serve-workers.ts";
import { startServedModelWorkers, stoppedTogether } from "../runtime/served-model-workers.ts";
import { DEFAULT_SERVED_MODELS, SERVED_SUITE, ServeOptions, servedPools } from "../declared/serve-options.ts";
import { familyFor } from "../families.ts";
import { SERVE_EXPERIMENT_FAMILIES, experimentOffers } from "../runtime/experiment-setups.ts";

/** One JSON line per request and per queue record on stderr, and GET /metrics for admin keys. */
const OBSERVED = { logger: jsonLinesLogger({ out: (line) => process.stderr.write(`${line}\n`) }), metrics: true };

/** How long a stop may take before serve exits anyway. */
const STOP_GRACE_MS = 20_000;

/**
 * Runs the router API locally against the real protocol stand-ins (DynamoDB Local, fauxqs) with
 * the embedded suite's evolved pool registered as "embedded", and each family's that declares a
 * pool to serve under the family's name. Stops everything on SIGINT/SIGTERM.
 */
export async function serveCommand(input: z.input<typeof ServeOptions>): Promise<void> {
  const opts = ServeOptions.parse(input);
  // A port in use is said now, before DynamoDB Local and the evolution start (and stopped again).
  if (opts.port !== 0 && !(await portFree(opts.host, opts.port)))
    throw new UsageError(`--port ${opts.port}: ${opts.host}:${opts.port} is in use by another process`);
  const panelDocument = opts.voters ? await readPanelDocument(opts.voters) : undefined;
  const panel = panelDocument ? panelRouting(panelDocument) : undefined;
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // One policy worker per served model, started beside the evolution (each loads torch and its model); a folder a
  // worker refuses stops serve here.
  // Out of the box serve offers what this machine can run: the tiny model (flags narrow it: `--models none`).
  const models = opts.models ?? DEFAULT_SERVED_MODELS.map((m) => ({ ...m }));
  if (!opts.models) log("offering the tiny model (GET /v1/models); --models none offers none, --models name=DIR yours");
  const modelWorkers = models.length ? startServedModelWorkers(models, log) : undefined;
  process.stderr.write("evolving the embedded sibling pool …\n");
  // Seeds a queued run has not seen are evolved on a worker thread: the API keeps answering.
  const setup = embeddedSetups(defaultEmbeddedSettings, offThreadInstances())("test");
  const instance = await setup.instance(1);
  const tasks = [...instance.train, ...instance.dev, ...instance.heldout];
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const served = await modelWorkers;
  process.stderr.write("starting DynamoDB Local, fauxqs and the workers' thread …\n");
  const stack = await startServeStack(opts, { panel, panelDocument }, tasks, byId, setup, served);
  const gateway = await startGateway(opts, stack);
  let server: { url: string; close: () => Promise<void> } | undefined;
  const stop = async (signal: string) => {
    process.stderr.write(`\n${signal}: stopping the API, the workers, fauxqs and DynamoDB Local\n`);
    // A stop that hangs (a worker deep in a training step) still ends: the exit kills every child this process started.
    setTimeout(() => {
      process.stderr.write(
        `${signal}: not stopped after ${STOP_GRACE_MS / 1000} s; exiting (children are killed on exit)\n`,
      );
      process.exit(1);
    }, STOP_GRACE_MS).unref();
    gateway?.episodes.closeAll();
    await server?.close();
    await stack.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  try {
    const { pool, others } = await registerPools(stack.deps, instance.evolution);
    const secret = opts.apiKey ?? `hs_${randomUUID().replace(/-/g, "")}`;
    await stack.deps.keys.put({ id: "local", hash: hashSecret(secret), scopes: ["admin"] });

    const assets = loadConsoleAssets(CONSOLE_DIST);
    const deps = { ...stack.deps, ...(gateway ? { gateway } : {}), ...(assets ? { console: assets } : {}) };
    server = await listen(createApp(deps).fetch, opts.port, opts.host, { bodyLimit: bodyLimitOf(deps) }).catch(
      (err: NodeJS.ErrnoException) => {
        throw err.code === "EADDRINUSE" || err.code === "EACCES"
          ? new UsageError(`--port ${opts.port}: cannot listen on ${opts.host}:${opts.port} (${err.code})`)
          : err;
      },
    );
    printServing(server.url, { ...stack, pools: [String(pool.version), others] }, opts, secret, gateway !== undefined);
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

/**
 * The local stack serve runs: its workers (experiments, rescue rollouts, votes) on a thread of their own, so an
 * experiment never stalls another key's requests on the API's event loop; stopped with the model workers.
 */
async function startServeStack(
  opts: ServeOptions,
  { panel, panelDocument }: { panel?: ReturnType<typeof panelRouting>; panelDocument?: ServeWorkersData["panel"] },
  tasks: ServeWorkersData["tasks"],
  byId: ReadonlyMap<string, ServeWorkersData["tasks"][number]>,
  setup: ReturnType<ReturnType<typeof embeddedSetups>>,
  served: Awaited<ReturnType<typeof startServedModelWorkers>> | undefined,
) {
  const outbound = { allowLoopbackEndpoints: opts.allowLoopbackEndpoints, allowEndpointCidrs: opts.allowEndpointCidr };
  // Experiments run on the embedded suite, and on the families serve opens and callers' environments where a base model
  // is served at a policy worker (`--models`).
  const experiments = { families: SERVE_EXPERIMENT_FAMILIES, ...(served ? { models: served.workers } : {}) };
  const inProcesses = opts.dispatchProcesses > 1;
  const workersData: ServeWorkersData = {
    tasks,
    ...outbound,
    ...(inProcesses ? { rolloutsInProcess: true } : {}),
    experiments,
    ...(panelDocument ? { panel: panelDocument } : {}),
  };
  return stoppedTogether(
    startLocalStack({
      ...(panel ? { panel } : {}),
      tasks: { get: async (id) => byId.get(id) },
      workersOn: {
        module: SERVE_WORKERS.thread,
        data: workersData,
        ...(inProcesses
          ? { processes: { module: SERVE_WORKERS.process, count: { dispatch: opts.dispatchProcesses } } }
          : {}),
      },
      ...outbound,
      offers: servedOffers(served?.models ?? [], experimentOffers(experiments)),
      builtinEnvironments: { embedded: new TextEnvironment(setup.env) }, // as the workers' thread's: the API lets a rescue name them
      log: (line) => process.stderr.write(`${line}\n`),
      ...OBSERVED,
      ...(served ? { policyWorkers: served.workers } : {}),
    }),
    served,
  );
}

/** The Rank-1 gateway's settings when `--gateway-upstream` asks for one; the stack is stopped if they fail. */
async function startGateway(
  opts: ServeOptions,
  stack: { stores: { gatewayEpisodes: Parameters<typeof gatewaySettings>[0]["store"] }; stop: () => Promise<void> },
) {
  return opts.gatewayUpstream
    ? await gatewaySettings({
        upstream: opts.gatewayUpstream,
        pool: opts.gatewayPool,
        env: opts.gatewayEnv,
        store: stack.stores.gatewayEpisodes,
        ...(opts.gatewayModel ? { model: opts.gatewayModel } : {}),
      }).catch(async (err) => {
        await stack.stop();
        throw err;
      })
    : undefined;
}

/** What serve prints once it listens: where, its admin key (when it made one), the gateway, a first request to try. */
function printServing(
  url: string,
  stack: { dynamoEndpoint: string; sqsEndpoint: string; pools: [string, readonly string[]] },
  opts: ServeOptions,
  secret: string,
  gateway: boolean,
) {
  const [version, others] = stack.pools;
  console.log(
    `harness-s API listening on ${url} (DynamoDB Local at ${stack.dynamoEndpoint}; SQS at ${stack.sqsEndpoint}; pools "${SERVED_SUITE}" v${version}${others.map((id) => ` and "${id}"`).join("")})`,
  );
  if (!opts.apiKey) console.log(`API key (admin): ${secret}`);
  console.log(`web console: ${url}/console/ (sign in with a key; \`npm run build:console\` if it answers 404)`);
  if (gateway)
    console.log(
      `Rank-1 gateway: point an agent's OpenAI client at ${url}/v1/gateway (pool "${opts.gatewayPool}", model endpoint ${opts.gatewayUpstream})`,
    );
  console.log(
    `try: curl -s -X POST ${url}/v1/route -H 'authorization: Bearer ${opts.apiKey ? "<your key>" : secret}' -H 'content-type: application/json' -d '{"poolId":"embedded","task":{"id":"app-1","family":"app","tags":["app","bulk"]},"failureTags":["incomplete-results"],"k":2}'`,
  );
  console.log("Ctrl-C stops everything started here.");
}

/**
 * Registers the suite's evolved pool with its initial profiles, and each family's pool to serve; returns the suite's
 * and the others' ids.
 */
async function registerPools(deps: { pools: PoolStore; profiles: ProfileStore }, evolution: SeedInstance["evolution"]) {
  const pool = createPool(SERVED_SUITE, evolution.pool.base, evolution.pool.siblings, evolution.pool.notes);
  await deps.pools.put(pool);
  for (const p of Object.values(evolution.initialProfiles)) await deps.profiles.put(pool.id, p);
  const others = servedPools().filter((id) => id !== SERVED_SUITE);
  for (const name of others) await deps.pools.put(familyFor(name).servePool!());
  return { pool, others };
}

/** Whether `host:port` can be listened on now. */
function portFree(host: string, p: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(p, host, () => probe.close(() => resolve(true)));
  });
}
