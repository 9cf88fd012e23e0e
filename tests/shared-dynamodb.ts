import type { TestProject } from "vitest/node";
import { startDynamoDbLocal } from "@harness-s/adapters/local";

// One DynamoDB Local (one JVM) for every integration test file: each file makes its own tables
// under a prefix of its own in it (local stacks with a random one), instead of starting a JVM.
export default async function setup(project: TestProject) {
  const dynamo = await startDynamoDbLocal(60_000);
  project.provide("dynamoEndpoint", dynamo.endpoint);
  return () => dynamo.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
