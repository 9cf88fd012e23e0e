import { randomUUID } from "node:crypto";
import { z } from "zod";
import { createPool, hashSecret } from "@harness-s/core";
import { gatewaySettings } from "../gateway-setup.ts";
import { panelRouting, readPanelDocument } from "../panel-file.ts";
import { dbbenchH0, dbbenchSiblings } from "@harness-s/dbbench";
import { bodyLimitOf, createApp } from "@harness-s/functions/api/app";
import { listen } from "@harness-s/functions/api/local";
import { defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import { startLocalStack } from "@harness-s/functions/local/stack";
import { port } from "../flags.ts";
import type { ServeWorkersData } from "../runtime/serve-workers.ts";

/** The entry of serve's workers' thread. */
const SERVE_WORKERS_ENTRY = new URL("../runtime/serve-workers.mjs", import.meta.url);

/** `serve`'s options, as the command line gives them (strings) or a caller does (numbers). */
export const ServeOptions = z.strictObject({
  port: port.default(18787),
  host: z.string().min(1).default("127.0.0.1"),
  apiKey: z.string().min(8, "an API key needs at least 8 characters").optional(),
  /** A voter panel file (JSON, `VoterPanel`): its voters decide `/v1/route`; LLM voters' keys come from the environment variables it names. */
  voters: z.string().min(1).optional(),
  /** The Rank-1 gateway's model endpoint (OpenAI-compatible base URL); none: no gateway. */
  gatewayUpstream: z.string().url().optional(),
  gatewayModel: z.string().min(1).optional(),
  gatewayPool: z.string().min(1).default("embedded"),
  gatewayEnv: z.enum(["generic", "dbbench"]).default("generic"),
});
export type ServeOptions = z.infer<typeof ServeOptions>;

/**
 * Runs the router API locally against the real protocol stand-ins (DynamoDB Local, fauxqs) with
 * the embedded suite's evolved pool registered as "embedded". Stops everything on SIGINT/SIGTERM.
 */
export async function serveCommand(input: z.input<typeof ServeOptions>): Promise<void> {
  const opts = ServeOptions.parse(input);
  const panelDocument = opts.voters ? await readPanelDocument(opts.voters) : undefined;
  const panel = panelDocument ? panelRouting(panelDocument) : undefined;
  const gateway = opts.gatewayUpstream
    ? await gatewaySettings({ upstream: opts.gatewayUpstream, pool: opts.gatewayPool, env: opts.gatewayEnv, ...(opts.gatewayModel ? { model: opts.gatewayModel } : {}) })
    : undefined;
  process.stderr.write("evolving the embedded sibling pool …\n");
  // Seeds a queued run has not seen are evolved on a worker thread: the API keeps answering.
  const setup = embeddedSetups(defaultEmbeddedSettings, offThreadInstances())("test");
  const instance = await setup.instance(1);
  const tasks = [...instance.train, ...instance.dev, ...instance.heldout];
  const byId = new Map(tasks.map((t) => [t.id, t]));
  process.stderr.write("starting DynamoDB Local, fauxqs and the workers' thread …\n");
  // The workers (experiments, rescue rollouts, votes) run on a thread of their own: an experiment
  // never stalls another key's requests on the API's event loop.
  const workersData: ServeWorkersData = { tasks, ...(panelDocument ? { panel: panelDocument } : {}) };
  const stack = await startLocalStack({
    ...(panel ? { panel } : {}),
    tasks: { get: async (id) => byId.get(id) },
    workersOn: { module: SERVE_WORKERS_ENTRY, data: workersData },
    log: (line) => process.stderr.write(`${line}\n`),
  });
  let server: { url: string; close: () => Promise<void> } | undefined;
  const stop = async (signal: string) => {
    process.stderr.write(`\n${signal}: stopping the API, the poller, fauxqs and DynamoDB Local\n`);
    gateway?.episodes.closeAll();
    await server?.close();
    await stack.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  try {
    const { evolution } = instance;
    const pool = createPool("embedded", evolution.pool.base, evolution.pool.siblings, evolution.pool.notes);
    await stack.deps.pools.put(pool);
    for (const p of Object.values(evolution.initialProfiles)) await stack.deps.profiles.put(pool.id, p);
    await stack.deps.pools.put(createPool("dbbench", dbbenchH0, dbbenchSiblings, { note: "DBBench siblings; no profiles until evidence is reported" }));
    const secret = opts.apiKey ?? `hs_${randomUUID().replace(/-/g, "")}`;
    await stack.deps.keys.put({ id: "local", hash: hashSecret(secret), scopes: ["admin"] });

    const deps = { ...stack.deps, ...(gateway ? { gateway } : {}) };
    server = await listen(createApp(deps).fetch, opts.port, opts.host, { bodyLimit: bodyLimitOf(deps) });
    const url = server.url;
    console.log(`harness-s API listening on ${url} (DynamoDB Local at ${stack.dynamoEndpoint}; SQS at ${stack.sqsEndpoint}; pools "embedded" v${pool.version} and "dbbench")`);
    if (!opts.apiKey) console.log(`API key (admin): ${secret}`);
    if (gateway) console.log(`Rank-1 gateway: point an agent's OpenAI client at ${url}/v1/gateway (pool "${opts.gatewayPool}", model endpoint ${opts.gatewayUpstream})`);
    console.log(
      `try: curl -s -X POST ${url}/v1/route -H 'authorization: Bearer ${opts.apiKey ? "<your key>" : secret}' -H 'content-type: application/json' -d '{"poolId":"embedded","task":{"id":"app-1","family":"app","tags":["app","bulk"]},"failureTags":["incomplete-results"],"k":2}'`,
    );
    console.log("Ctrl-C stops everything started here.");
  } catch (err) {
    await stack.stop();
    throw err;
  }
}
