import { readFileSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { startDynamoDbLocal } from "@harness-s/adapters/local";

// One DynamoDB Local (one JVM) for every integration test file: each file makes its own tables
// under a prefix of its own in it (local stacks with a random one), instead of starting a JVM.
export default async function setup(project: TestProject) {
  const dynamo = await startDynamoDbLocal(60_000);
  project.provide("dynamoEndpoint", dynamo.endpoint);
  return async () => {
    // The JVM's CPU seconds, which no test file's count holds (tests/cpu-reporter.ts counts the files').
    const cpu = dynamo.pid ? processCpuSeconds(dynamo.pid) : undefined;
    if (cpu !== undefined)
      console.log(`DynamoDB Local (shared by the ${project.name} project): ${cpu.toFixed(1)} CPU s`);
    await dynamo.stop();
  };
}

/** A running process's own CPU seconds (`/proc/<pid>/stat`: utime + stime, at 100 ticks a second), where Linux has it. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
