// What one DynamoDB request costs in CPU on this machine, kind by kind (issue 54's bench): Node's
// (the AWS SDK's serialising, signing and parsing, and the socket) and DynamoDB Local's JVM, per
// request, for a put, a conditional put, a get, an update, a two-item transaction (a meter's
// write), a transaction of 8 conditional puts (grouped rollouts) and a query; 200 of each, after a
// first round that warms the JVM; and each request's time, one after another on an otherwise idle loop.
// Run: node --import tsx scripts/dynamodb-request-cpu.ts [requests per kind, default 200]
import { execSync } from "node:child_process";
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { localCredentials, startDynamoDbLocal } from "@harness-s/adapters/local";
import { processCpuSeconds } from "../packages/cli/src/commands/cpu-split.ts";

const n = Number(process.argv[2] ?? 200);
const local = await startDynamoDbLocal();
const db = new DynamoDBClient({ endpoint: local.endpoint, region: "us-east-1", credentials: localCredentials });
const key = (k: string, s: string) => ({ k: { S: k }, s: { S: s } });
const item = (k: string, s: string) => ({ ...key(k, s), v: { S: "x".repeat(500) } });
const add = (k: string) => ({
  TableName: "cpu",
  Key: key(k, "x"),
  UpdateExpression: "ADD n :one",
  ExpressionAttributeValues: { ":one": { N: "1" } },
});
const KINDS: Record<string, (i: number) => unknown> = {
  put: (i) => new PutItemCommand({ TableName: "cpu", Item: item(`k${i % 50}`, `s${i}`) }),
  "conditional put": (i) =>
    new PutItemCommand({
      TableName: "cpu",
      Item: item(`c${i % 50}`, `s${i}`),
      ConditionExpression: "attribute_not_exists(s)",
    }),
  get: (i) => new GetItemCommand({ TableName: "cpu", Key: key(`k${i % 50}`, `s${i}`) }),
  update: (i) => new UpdateItemCommand(add(`u${i % 5}`)),
  "transaction of 2 updates": (i) =>
    new TransactWriteItemsCommand({ TransactItems: [0, 1].map((j) => ({ Update: add(`t${(i + j) % 5}`) })) }),
  "transaction of 8 puts": (i) =>
    new TransactWriteItemsCommand({
      TransactItems: Array.from({ length: 8 }, (_, j) => ({
        Put: { TableName: "cpu", Item: item(`p${i}`, `s${j}`), ConditionExpression: "attribute_not_exists(s)" },
      })),
    }),
  query: (i) =>
    new QueryCommand({
      TableName: "cpu",
      KeyConditionExpression: "k = :k",
      ExpressionAttributeValues: { ":k": { S: `k${i % 50}` } },
      ProjectionExpression: "s",
    }),
};
try {
  await db.send(
    new CreateTableCommand({
      TableName: "cpu",
      KeySchema: [
        { AttributeName: "k", KeyType: "HASH" },
        { AttributeName: "s", KeyType: "RANGE" },
      ],
      AttributeDefinitions: [
        { AttributeName: "k", AttributeType: "S" },
        { AttributeName: "s", AttributeType: "S" },
      ],
      BillingMode: "PAY_PER_REQUEST",
    }),
  );
  const java = Number(execSync("pgrep -n java").toString());
  const node = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  };
  for (const round of [0, 1]) {
    for (const [kind, make] of Object.entries(KINDS)) {
      const [n0, j0, t0] = [node(), processCpuSeconds(java) ?? 0, performance.now() / 1000];
      for (let i = 0; i < n; i++) await db.send(make((round + 1) * 100_000 + i) as never);
      const per = (s: number) => ((s * 1000) / n).toFixed(2);
      const cpu = `Node ${per(node() - n0)} ms, DynamoDB Local ${per((processCpuSeconds(java) ?? 0) - j0)} ms`;
      if (round === 1)
        console.log(
          `${kind.padEnd(26)} ${cpu} of CPU a request; ${per(performance.now() / 1000 - t0)} ms a request, one after another`,
        );
    }
  }
} finally {
  db.destroy();
  await local.stop();
}
