import { execFileSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { tableSpecs } from "@harness-s/adapters";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { openApiDocument } from "../../functions/api/openapi.ts";
import { LAMBDA_RUNTIME, WORKERS } from "../../stacks/workers.ts";

interface Resource {
  type: string;
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: Pulumi mock inputs are untyped JSON read by many assertions
  inputs: Record<string, any>;
}
let resources: Resource[];
let builds: string[];

// sst.config.ts run with SST's own components under Pulumi mocks, offline (scripts/infra-snapshot.ts).
beforeAll(() => {
  const out = execFileSync("node", ["--import", "tsx", "scripts/infra-snapshot.ts"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  ({ resources, builds } = JSON.parse(out));
}, 120_000);

const ofType = (type: string) => resources.filter((r) => r.type === type);
const one = (type: string, name: string) => {
  const found = ofType(type).filter((r) => r.name === name);
  expect(found, `${type} ${name}`).toHaveLength(1);
  return found[0]!;
};
const policyOf = (roleName: string) => {
  const role = ofType("aws:iam/role:Role").find((r) => r.name.startsWith(roleName))!;
  return JSON.parse(role.inputs.inlinePolicies[0].policy).Statement as { actions: string[]; resources: string[] }[];
};
const grants = (roleName: string, action: string) =>
  policyOf(roleName)
    .filter((s) => s.actions.some((a) => a === action || (a.endsWith("*") && action.startsWith(a.slice(0, -1)))))
    .flatMap((s) => s.resources.map((r) => r.split(":").pop()!))
    .filter((r) => !r.endsWith("/*"));

describe("infrastructure (sst.config.ts under Pulumi mocks)", () => {
  it("declares every table with the keys and TTL the adapters use", () => {
    for (const spec of tableSpecs) {
      const t = one("aws:dynamodb/table:Table", `${spec.name}Table`).inputs;
      expect(t.hashKey).toBe(spec.partitionKey);
      expect(t.rangeKey).toBe(spec.sortKey);
      expect(t.globalSecondaryIndexes).toEqual([]);
      expect(t.ttl?.attributeName).toBe(spec.ttlAttribute);
    }
  });

  it("gives each worker a queue with a DLQ redrive, a visibility timeout above the function's, and a partial-batch subscription", () => {
    const functions = ofType("aws:lambda/function:Function");
    for (const [worker, w] of Object.entries(WORKERS)) {
      const name = worker[0]!.toUpperCase() + worker.slice(1);
      const queue = one("aws:sqs/queue:Queue", `${name}QueueQueue`).inputs;
      const redrive = JSON.parse(queue.redrivePolicy);
      expect(redrive).toEqual({ deadLetterTargetArn: expect.stringMatching(new RegExp(`:${name}DlqQueue$`)), maxReceiveCount: w.retry });
      const mapping = ofType("aws:lambda/eventSourceMapping:EventSourceMapping").find((m) => m.inputs.eventSourceArn.endsWith(`:${name}QueueQueue`))!;
      expect(mapping.inputs.batchSize).toBe(w.batch);
      expect(mapping.inputs.functionResponseTypes).toEqual(["ReportBatchItemFailures"]);
      const fn = functions.find((f) => f.name.startsWith(`${name}QueueSubscriber`))!;
      expect(queue.visibilityTimeoutSeconds).toBeGreaterThan(fn.inputs.timeout);
    }
  });

  it("pins the Lambda runtime and bundles every handler the stacks name", () => {
    const functions = ofType("aws:lambda/function:Function");
    expect(functions).toHaveLength(5);
    for (const f of functions) expect(f.inputs.runtime).toBe(LAMBDA_RUNTIME);
    expect([...builds].sort()).toEqual(["functions/api/lambda.handler", ...Object.values(WORKERS).map((w) => w.handler)].sort());
  });

  it("grants through `link` exactly the tables and queues each function uses", () => {
    expect(grants("ApiRole", "dynamodb:GetItem").sort()).toEqual([
      "ApiKeysTable",
      "DecisionsTable",
      "ExperimentStepsTable",
      "ExperimentsTable",
      "PoolsTable",
      "ProcessedTable",
      "ProfilesTable",
      "RescueJobsTable",
      "RolloutsTable",
      "UsageTable",
    ]);
    expect(grants("ApiRole", "sqs:SendMessage").sort()).toEqual(["CoordinatorQueueQueue", "DispatchQueueQueue", "ProfileQueueQueue"]);
    expect(grants("VoteQueueSubscriber", "dynamodb:PutItem")).toEqual(["BallotsTable"]);
    expect(grants("DispatchQueueSubscriber", "dynamodb:PutItem").sort()).toEqual(["PoolsTable", "RescueJobsTable", "RolloutsTable"]);
    expect(grants("ProfileQueueSubscriber", "dynamodb:PutItem").sort()).toEqual(["ProcessedTable", "ProfilesTable"]);
    expect(grants("CoordinatorQueueSubscriber", "sqs:SendMessage").sort()).toEqual(["CoordinatorQueueQueue", "DispatchQueueQueue", "VoteQueueQueue"]);
    expect(grants("ProfileQueueSubscriber", "sqs:ReceiveMessage")).toEqual(["ProfileQueueQueue"]);
  });

  it("exposes the API through a Function URL whose app serves every route of the OpenAPI document", () => {
    expect(one("aws:lambda/functionUrl:FunctionUrl", "ApiUrl").inputs.authorizationType).toBe("NONE"); // bearer keys are checked by the app
    const served = new Set(createApp(memoryApiDeps()).routes.map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`));
    const documented = Object.entries(openApiDocument().paths ?? {}).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m} ${path}`));
    expect(documented.length).toBeGreaterThan(10);
    for (const route of documented) expect(served, route).toContain(route);
  });

  it("declares the policy-endpoint and LLM secrets (delivered in the encrypted resource file, not IAM)", () => {
    expect(
      ofType("sst:sst:Secret")
        .map((s) => s.name)
        .sort(),
    ).toEqual(["LlmApiKey", "PolicyEndpointToken", "PolicyEndpointUrl"]);
  });
});
