import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { serve, type ServerType } from "@hono/node-server";
import { z } from "zod";
import { createPool, hashSecret, statisticalVoters, systemClock, type ApiKeyRecord } from "@harness-s/core";
import {
  DynamoApiKeyStore,
  DynamoDecisionStore,
  DynamoPoolStore,
  DynamoProfileStore,
  DynamoUsageMeter,
  createTables,
  localCredentials,
  startDynamoDbLocal,
  tableNames,
} from "@harness-s/adapters";
import { createApp } from "../../../../functions/api/app.ts";
import { defaultEmbeddedSettings, embeddedSetup } from "../embedded.ts";

export const ServeOptions = z.object({
  port: z.number().int().min(0).max(65535).default(18787),
  host: z.string().default("127.0.0.1"),
  apiKey: z.string().min(8, "an API key needs at least 8 characters").optional(),
});
export type ServeOptions = z.infer<typeof ServeOptions>;

/**
 * Runs the router API locally against real DynamoDB (DynamoDB Local on a free loopback port),
 * with the embedded suite's evolved pool and profiles registered as pool "embedded".
 * Stops everything it started on SIGINT or SIGTERM.
 */
export async function serveCommand(input: z.input<typeof ServeOptions>): Promise<void> {
  const opts = ServeOptions.parse(input);
  process.stderr.write("starting DynamoDB Local …\n");
  const dynamo = await startDynamoDbLocal();
  let server: ServerType | undefined;
  const client = new DynamoDBClient({ endpoint: dynamo.endpoint, region: "us-east-1", credentials: localCredentials });
  const stop = async (signal: string) => {
    process.stderr.write(`\n${signal}: stopping the API and DynamoDB Local\n`);
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    client.destroy();
    await dynamo.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  try {
    const doc = DynamoDBDocumentClient.from(client);
    const names = tableNames("local-");
    await createTables(client, names);
    const deps = {
      pools: new DynamoPoolStore(doc, names),
      profiles: new DynamoProfileStore(doc, names),
      decisions: new DynamoDecisionStore(doc, names, 7 * 24 * 3600),
      keys: new DynamoApiKeyStore(doc, names),
      meter: new DynamoUsageMeter(doc, names),
      voters: statisticalVoters,
      clock: systemClock,
      newId: () => `dec_${randomUUID()}`,
      maxBodyBytes: 256 * 1024,
    };
    process.stderr.write("evolving the embedded sibling pool …\n");
    const { evolution } = await embeddedSetup(defaultEmbeddedSettings).instance(1);
    const registered = createPool("embedded", evolution.pool.base, evolution.pool.siblings, evolution.pool.notes);
    await deps.pools.put(registered);
    for (const p of Object.values(evolution.initialProfiles)) await deps.profiles.put(registered.id, p);
    const secret = opts.apiKey ?? `hs_${randomUUID().replace(/-/g, "")}`;
    const key: ApiKeyRecord = { id: "local", hash: hashSecret(secret), scopes: ["admin"] };
    await deps.keys.put(key);

    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: createApp(deps).fetch, port: opts.port, hostname: opts.host }, () => resolve(s));
    });
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : opts.port;
    const url = `http://${opts.host}:${port}`;
    console.log(`harness-s API listening on ${url} (DynamoDB Local at ${dynamo.endpoint}; pool "embedded" v${registered.version})`);
    if (!opts.apiKey) console.log(`API key (admin): ${secret}`);
    console.log(
      `try: curl -s -X POST ${url}/v1/route -H 'authorization: Bearer ${opts.apiKey ? "<your key>" : secret}' -H 'content-type: application/json' -d '{"poolId":"embedded","task":{"id":"app-1","family":"app","tags":["app","bulk"]},"failureTags":["incomplete-results"],"k":2}'`,
    );
    console.log("Ctrl-C stops everything started here.");
  } catch (err) {
    await dynamo.stop();
    throw err;
  }
}
