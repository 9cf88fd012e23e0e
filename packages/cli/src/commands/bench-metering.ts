import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { LocalPolicyEndpoints } from "@harness-s/core/dispatch";
import { newApiKey } from "@harness-s/core/access";
import { systemClock, type Environment } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { dynamoStores } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";
import { createApp } from "@harness-s/functions/api";
import { withApiCaches } from "@harness-s/functions/api";
import { listen } from "@harness-s/functions/api";
import { startLocalStack } from "@harness-s/functions/local";
import { load, median, type Load } from "./bench-api.ts";

/**
 * `/v1/route` over the local stack's tables (DynamoDB Local: the decision and the usage written
 * per request) with cost-of-goods metering on (each request in a consumption scope, every DynamoDB
 * call asking for and reporting its capacity) and off (the same tables through a plain client),
 * after a warm-up, four rounds of `seconds` each in alternating order, medians; the ratio is the
 * price of metering.
 */
export async function benchMetering(instance: SeedInstance, env: Environment, seconds: number): Promise<string[]> {
  const stack = await startLocalStack({
    tasks: { get: async () => undefined },
    policies: new LocalPolicyEndpoints(env),
  });
  const plain = new DynamoDBClient({
    endpoint: stack.dynamoEndpoint,
    region: "us-east-1",
    credentials: localCredentials,
  });
  try {
    await stack.stores.pools.put(instance.evolution.pool);
    for (const p of Object.values(instance.evolution.initialProfiles))
      await stack.stores.profiles.put(instance.evolution.pool.id, p);
    const { secret, record } = newApiKey("bench-metering", ["route"]);
    await stack.deps.keys.put(record);
    const { consumption: _on, ...unmetered } = stack.deps;
    const off = {
      ...unmetered,
      ...withApiCaches(dynamoStores(DynamoDBDocumentClient.from(plain), stack.tables), systemClock),
    };
    const on = await listen(createApp(stack.deps).fetch);
    const bare = await listen(createApp(off).fetch);
    try {
      const body = JSON.stringify({
        poolId: instance.evolution.pool.id,
        task: { id: "bench-1", family: "app", tags: ["app", "bulk"] },
        failureTags: ["incomplete-results"],
        k: 2,
      });
      const rounds = { on: [] as Load[], off: [] as Load[] };
      const round = (url: string) => load(`${url}/v1/route`, body, { authorization: `Bearer ${secret}` }, seconds);
      // DynamoDB Local's JVM warms up and collects garbage on its own schedule: one warm-up round
      // each (not counted), then rounds in alternating order, so neither side is always measured first.
      await round(on.url);
      await round(bare.url);
      for (let i = 0; i < 4; i++) {
        const [first, second] = i % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
        rounds[first].push(await round(first === "on" ? on.url : bare.url));
        rounds[second].push(await round(second === "on" ? on.url : bare.url));
      }
      const [m, u] = [median(rounds.on), median(rounds.off)];
      const line = (name: string, r: Load) =>
        `${name.padEnd(34)}${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors}`;
      return [
        line("/v1/route on DynamoDB, metered", m),
        `${line("  same, cost of goods not metered", u)}; metered/unmetered ${(m.rps / u.rps).toFixed(3)} req/s, p99 ${(m.p99 / u.p99).toFixed(2)}×`,
      ];
    } finally {
      await Promise.all([on.close(), bare.close()]);
    }
  } finally {
    plain.destroy();
    await stack.stop();
  }
}
