import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { createTables, dynamoStores, tableNames, tableSpecs } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";
import { roundRobin } from "./lambda-url.ts";
import { fixtureEntry } from "./fixture-build.ts";

/** The API Lambda as deployed, on loopback: its processes, their stores, and one URL that alternates between them. */
export interface LambdaGateway {
  url: string;
  stores: ReturnType<typeof dynamoStores>;
  /** Stops one process and starts a fresh one in its place (a cold start: nothing of the old one survives). */
  restart: (index: number) => Promise<void>;
  /** Stops the proxy and the processes. */
  close: () => Promise<void>;
}

const PROCESS_START_MS = 60_000;

/**
 * Two processes of the real API Lambda composition root (`functions/api/lambda.ts`, configured as
 * SST links it: table names and the `GatewayConfig` secret) over fresh tables of a DynamoDB Local,
 * each served as a streaming Function URL; `url` hands request i to process i mod 2.
 */
export async function startLambdaGateway(
  dynamoEndpoint: string,
  gateway: Record<string, unknown>,
  processes = 2,
): Promise<LambdaGateway> {
  const client = new DynamoDBClient({ endpoint: dynamoEndpoint, region: "us-east-1", credentials: localCredentials });
  const names = tableNames(`lambda-${randomUUID().slice(0, 8)}-`);
  await createTables(client, names);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SST_RESOURCE_App: JSON.stringify({ name: "harness-s", stage: "test" }),
    ...Object.fromEntries(tableSpecs.map((t) => [`SST_RESOURCE_${t.name}`, JSON.stringify({ name: names[t.name] })])),
    SST_RESOURCE_GatewayConfig: JSON.stringify({ value: JSON.stringify(gateway) }),
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
  };
  const children: ChildProcess[] = [];
  const urls: string[] = [];
  const entry = await fixtureEntry("lambda-function-url");
  const start = async (i: number) => {
    const child = spawn("node", [entry], {
      env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    children[i] = child;
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the Lambda process did not start")), PROCESS_START_MS);
      child.once("exit", (code) => reject(new Error(`the Lambda process exited (${code}) before serving`)));
      createInterface({ input: child.stdout! }).once("line", (l) => {
        clearTimeout(timer);
        resolve(l);
      });
    });
    urls[i] = line.trim();
  };
  const stop = async (i: number) => {
    const child = children[i];
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  };
  try {
    await Promise.all(Array.from({ length: processes }, (_, i) => start(i)));
  } catch (err) {
    await Promise.all(children.map((_, i) => stop(i)));
    throw err;
  }
  const proxy = await roundRobin(() => urls);
  const doc = DynamoDBDocumentClient.from(client);
  return {
    url: proxy.url,
    stores: dynamoStores(doc, names),
    restart: async (i) => {
      await stop(i);
      await start(i);
    },
    close: async () => {
      await proxy.close();
      await Promise.all(children.map((_, i) => stop(i)));
      client.destroy();
    },
  };
}
