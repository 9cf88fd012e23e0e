import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { BY_KEY_INDEX, tableKeys, tableSpecs } from "@harness-s/adapters/dynamo";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { openApiDocument } from "../../functions/api/openapi.ts";
import { CALLER_ROLLOUT_FAIRNESS } from "@harness-s/core/dispatch";
import {
  API_MEMORY,
  CONSOLE_BUNDLE,
  DISPATCH_CONCURRENCY,
  DISPATCH_DEAD_LETTERS,
  LAMBDA_RUNTIME,
  WORKERS,
  memoryGb,
} from "../../infra/settings.ts";
import { GPU_ENDPOINT } from "../../stacks/policy-endpoint-settings.ts";
import {
  ALARM_EVALUATION_PERIODS,
  ALARM_PERIOD_SECONDS,
  DASHBOARD_WIDGETS,
  alarmEmailAddress,
  oldestMessageSeconds,
} from "../../stacks/observability-settings.ts";
import { SERVED_MODELS } from "../../infra/settings.ts";

interface Resource {
  type: string;
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: Pulumi mock inputs are untyped JSON read by many assertions
  inputs: Record<string, any>;
}
let resources: Resource[];
let builds: string[];
let links: Record<string, Record<string, Record<string, unknown>>>;

// sst.config.ts run with SST's own components under Pulumi mocks, offline (scripts/infra-snapshot.ts).
// SST's platform is installed first when missing (this file run alone on a fresh clone).
// The AlarmEmail secret set as `npx sst secret set` would (SST reads SST_SECRET_<name>): the alarms' topic subscribes
// it.
const ALARM_EMAIL = "ops@example.com";
beforeAll(() => {
  execFileSync("node", ["scripts/sst-install-offline.mjs"], { stdio: "inherit" });
  // The API function copies the built console (copyFiles: console/dist must be there, as `npm ci` leaves it).
  execFileSync("node", ["scripts/build-console.mjs"], { stdio: "ignore" });
  const out = execFileSync("node", ["--import", "tsx", "scripts/infra-snapshot.ts"], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, SST_SECRET_AlarmEmail: ALARM_EMAIL },
  });
  ({ resources, builds, links } = JSON.parse(out));
}, 300_000);

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
      // Each index as the local runtime creates it (createTables: tableKeys), every attribute projected.
      expect(t.globalSecondaryIndexes).toEqual(
        (spec.indexes ?? []).map((i) =>
          expect.objectContaining({
            name: i.name,
            hashKey: i.partitionKey,
            rangeKey: i.sortKey,
            projectionType: "ALL",
          }),
        ),
      );
      expect([...t.attributes].map((a: { name: string; type: string }) => `${a.name}:${a.type}`).sort()).toEqual(
        tableKeys(spec)
          .AttributeDefinitions.map((a) => `${a.AttributeName}:${a.AttributeType}`)
          .sort(),
      );
      expect(t.ttl?.attributeName).toBe(spec.ttlAttribute);
    }
  });

  it("lists a key's experiments and rescues through the byKey index (keyId, listAt) on both tables", () => {
    for (const name of ["Experiments", "RescueJobs"]) {
      const t = one("aws:dynamodb/table:Table", `${name}Table`).inputs;
      expect(t.globalSecondaryIndexes, name).toEqual([
        expect.objectContaining({ name: "byKey", hashKey: "keyId", rangeKey: "listAt", projectionType: "ALL" }),
      ]);
    }
    expect(BY_KEY_INDEX).toEqual({ name: "byKey", partitionKey: "keyId", sortKey: "listAt" });
  });

  it("gives each worker a queue with a DLQ redrive, a visibility timeout above the function's, and a partial-batch subscription", () => {
    const functions = ofType("aws:lambda/function:Function");
    for (const [worker, w] of Object.entries(WORKERS)) {
      const name = worker[0]!.toUpperCase() + worker.slice(1);
      const queue = one("aws:sqs/queue:Queue", `${name}QueueQueue`).inputs;
      const redrive = JSON.parse(queue.redrivePolicy);
      expect(redrive).toEqual({
        deadLetterTargetArn: expect.stringMatching(new RegExp(`:${name}DlqQueue$`)),
        maxReceiveCount: w.retry,
      });
      const mapping = ofType("aws:lambda/eventSourceMapping:EventSourceMapping").find((m) =>
        m.inputs.eventSourceArn.endsWith(`:${name}QueueQueue`),
      )!;
      expect(mapping.inputs.batchSize).toBe(w.batch);
      expect(mapping.inputs.functionResponseTypes).toEqual(["ReportBatchItemFailures"]);
      const fn = functions.find((f) => f.name.startsWith(`${name}QueueSubscriber`))!;
      expect(queue.visibilityTimeoutSeconds).toBeGreaterThan(fn.inputs.timeout);
    }
  });

  it("pins the Lambda runtime and bundles every handler the stacks name", () => {
    const functions = ofType("aws:lambda/function:Function");
    expect(functions).toHaveLength(6);
    for (const f of functions) expect(f.inputs.runtime).toBe(LAMBDA_RUNTIME);
    expect([...builds].sort()).toEqual(
      [
        "functions/api/lambda.handler",
        ...Object.values(WORKERS).map((w) => w.handler),
        DISPATCH_DEAD_LETTERS.handler,
      ].sort(),
    );
  });

  it("grants through `link` exactly the tables and queues each function uses", () => {
    expect(grants("ApiRole", "dynamodb:GetItem").sort()).toEqual([
      "ApiKeysTable",
      "DecisionsTable",
      "ExperimentStepsTable",
      "ExperimentsTable",
      "GatewayEpisodesTable",
      "KeyEventsTable",
      "KeysTable",
      "PolicyEndpointsTable",
      "PoolEvolutionsTable",
      "PoolsTable",
      "ProcessedTable",
      "ProfilesTable",
      "RescueJobsTable",
      "RolloutsTable",
      "UsageDaysTable",
      "UsageTable",
    ]);
    // The coordinator runs pool evolutions: their jobs, the caller's endpoint records, the pools and their profiles.
    expect(grants("CoordinatorQueueSubscriber", "dynamodb:PutItem").sort()).toEqual(
      expect.arrayContaining(["PoolEvolutionsTable", "PolicyEndpointsTable", "PoolsTable", "ProfilesTable"]),
    );
    expect(grants("ApiRole", "sqs:SendMessage").sort()).toEqual([
      "CoordinatorQueueQueue",
      "DispatchQueueQueue",
      "ProfileQueueQueue",
    ]);
    // Every worker meters what each message cost to its payer: the usage tables, and nothing more than it uses besides.
    expect(grants("VoteQueueSubscriber", "dynamodb:PutItem").sort()).toEqual([
      "BallotsTable",
      "UsageDaysTable",
      "UsageTable",
    ]);
    // Dispatch reads the caller's registered endpoint for a rescue's rollouts, and meters their spend to the key.
    // Its running places (issue 71) and the markers that meter a slot once (Processed).
    expect(grants("DispatchQueueSubscriber", "dynamodb:PutItem").sort()).toEqual([
      "PolicyEndpointsTable",
      "PoolsTable",
      "ProcessedTable",
      "RescueJobsTable",
      "RolloutsTable",
      "RunningPlacesTable",
      "UsageDaysTable",
      "UsageTable",
    ]);
    // The dispatch DLQ's consumer reads a slot's rollout and fails its slot on its rescue: those two tables only.
    expect(grants("DispatchDlqSubscriber", "dynamodb:UpdateItem").sort()).toEqual(["RescueJobsTable", "RolloutsTable"]);
    expect(grants("ProfileQueueSubscriber", "dynamodb:PutItem").sort()).toEqual([
      "ProcessedTable",
      "ProfilesTable",
      "UsageDaysTable",
      "UsageTable",
    ]);
    expect(grants("CoordinatorQueueSubscriber", "sqs:SendMessage").sort()).toEqual([
      "CoordinatorQueueQueue",
      "DispatchQueueQueue",
      "VoteQueueQueue",
    ]);
    expect(grants("ProfileQueueSubscriber", "sqs:ReceiveMessage")).toEqual(["ProfileQueueQueue"]);
    // Dispatch sends a rollout past its key's running places back to its own queue, and to no other.
    expect(grants("DispatchQueueSubscriber", "sqs:SendMessage")).toEqual(["DispatchQueueQueue"]);
  });

  it("runs dispatch at most DISPATCH_CONCURRENCY invocations at once, above any one key's share of running rollouts; the other workers unbounded", () => {
    const mappings = ofType("aws:lambda/eventSourceMapping:EventSourceMapping");
    const dispatch = mappings.find((m) => m.inputs.eventSourceArn.endsWith(":DispatchQueueQueue"))!;
    expect(dispatch.inputs.scalingConfig).toEqual({ maximumConcurrency: DISPATCH_CONCURRENCY });
    expect(DISPATCH_CONCURRENCY).toBeGreaterThan(CALLER_ROLLOUT_FAIRNESS.perKeyRunning);
    expect(mappings.filter((m) => m.inputs.scalingConfig !== undefined)).toHaveLength(1);
  });

  it("exposes the API through a Function URL whose app serves every route of the OpenAPI document", () => {
    expect(one("aws:lambda/functionUrl:FunctionUrl", "ApiUrl").inputs.authorizationType).toBe("NONE"); // bearer keys are checked by the app
    const served = new Set(
      createApp(memoryApiDeps()).routes.map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
    );
    const documented = Object.entries(openApiDocument().paths ?? {}).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((m) => `${m} ${path}`),
    );
    expect(documented.length).toBeGreaterThan(10);
    for (const route of documented) expect(served, route).toContain(route);
  });

  it("declares the policy-endpoint and LLM secrets (delivered in the encrypted resource file, not IAM)", () => {
    expect(
      ofType("sst:sst:Secret")
        .map((s) => s.name)
        .sort(),
    ).toEqual([
      "AlarmEmail",
      "BootstrapAdminKeyHash",
      "EndpointCidrs",
      "GatewayConfig",
      "LlmApiKey",
      "PolicyEndpointToken",
      "PolicyEndpointUrl",
      "PoolProposer",
      "PriceList",
      "VoterKeys",
      "VoterPanel",
    ]);
  });

  it("links the endpoint allowlist (EndpointCidrs) to every function that reaches a caller's endpoint or environment: the API, dispatch and the coordinator (pool evolutions), and to no other", () => {
    const linked = Object.entries(links)
      .filter(([, l]) => "EndpointCidrs" in l)
      .map(([handler]) => handler)
      .sort();
    expect(linked).toEqual(
      ["functions/api/lambda.handler", WORKERS.dispatch.handler, WORKERS.coordinator.handler].sort(),
    );
    // The pool evolutions' LLM proposer: the coordinator only.
    expect(
      Object.entries(links)
        .filter(([, l]) => "PoolProposer" in l)
        .map(([handler]) => handler),
    ).toEqual([WORKERS.coordinator.handler]);
  });

  it("streams the API's Function URL (the gateway's server-sent events), keeps gateway episodes in a table with TTL, and links that table and the gateway's config to the API only", () => {
    // Assess: RESPONSE_STREAM invoke mode, a timeout above the gateway's wait for one completion.
    expect(one("aws:lambda/functionUrl:FunctionUrl", "ApiUrl").inputs.invokeMode).toBe("RESPONSE_STREAM");
    const api = ofType("aws:lambda/function:Function").find((f) => f.name.startsWith("Api"))!;
    expect(api.inputs.timeout).toBe(180);
    // Each function's memory as infra/settings.ts declares it: the cost-of-goods meter bills GB-seconds with the same
    // figure.
    expect(api.inputs.memorySize).toBe(memoryGb(API_MEMORY) * 1024);
    for (const f of ofType("aws:lambda/function:Function").filter((g) => !g.name.startsWith("Api")))
      expect(f.inputs.memorySize).toBe(memoryGb(WORKERS.dispatch.memory) * 1024);
    expect(memoryGb(DISPATCH_DEAD_LETTERS.memory)).toBe(memoryGb(WORKERS.dispatch.memory));
    const table = one("aws:dynamodb/table:Table", "GatewayEpisodesTable").inputs;
    expect(table.ttl).toMatchObject({ attributeName: "expiresAt", enabled: true });
    const roles = ofType("aws:iam/role:Role")
      .map((r) => r.name)
      .filter((name) => /^(ApiRole|\w+(Queue|Dlq)Subscriber\w*FunctionRole)$/.test(name));
    expect(roles).toHaveLength(6);
    expect(roles.filter((role) => grants(role, "dynamodb:Query").includes("GatewayEpisodesTable"))).toEqual([
      expect.stringMatching(/^ApiRole/),
    ]);
    const linked = Object.entries(links).filter(([, l]) => "GatewayConfig" in l && "GatewayEpisodes" in l);
    expect(linked.map(([handler]) => handler)).toEqual(["functions/api/lambda.handler"]);
    expect(Object.entries(links).filter(([, l]) => "GatewayEpisodes" in l)).toHaveLength(1);
  });

  it("copies the built web console into the API function's package beside its handler (CONSOLE_BUNDLE), which serves it at /console (issue 58)", () => {
    // The archive SST zipped for the function (its bundle and its copyFiles): the console's files under the folder the
    // handler reads.
    const zip = readFileSync(".sst/artifacts/Api/code.zip");
    for (const file of ["index.mjs", "index.html", "app.js", "app.css"].map((f) =>
      f === "index.mjs" ? f : `${CONSOLE_BUNDLE.to}/${f}`,
    ))
      expect(zip.includes(Buffer.from(file)), file).toBe(true);
    expect(CONSOLE_BUNDLE.from).toBe("console/dist");
  });

  it("links the first admin key's hash (BootstrapAdminKeyHash) and the keys' tables to the API, the one function that authenticates keys, and to no other (issue 56)", () => {
    const linked = (name: string) =>
      Object.entries(links)
        .filter(([, l]) => name in l)
        .map(([handler]) => handler);
    for (const name of ["BootstrapAdminKeyHash", "Keys", "KeyEvents", "ApiKeys"])
      expect(linked(name), name).toEqual(["functions/api/lambda.handler"]);
    // Unset until the operator sets it: the API reads "unset" as no bootstrap.
    expect(links["functions/api/lambda.handler"]!.BootstrapAdminKeyHash).toMatchObject({ value: "unset" });
    const roles = ofType("aws:iam/role:Role")
      .map((r) => r.name)
      .filter((name) => /^(ApiRole|\w+QueueSubscriber\w*FunctionRole)$/.test(name));
    for (const table of ["KeysTable", "KeyEventsTable", "ApiKeysTable"])
      expect(
        roles.filter((role) => grants(role, "dynamodb:PutItem").includes(table)),
        table,
      ).toEqual([expect.stringMatching(/^ApiRole/)]);
  });

  it("links the voter panel and its keys to every function that decides: the API, the vote worker and the coordinator, and to no other", () => {
    const linked = Object.entries(links)
      .filter(([, l]) => "VoterPanel" in l && "VoterKeys" in l)
      .map(([handler]) => handler)
      .sort();
    expect(linked).toEqual(["functions/api/lambda.handler", WORKERS.coordinator.handler, WORKERS.vote.handler].sort());
  });

  it("keeps experiments' reports in one private bucket: the coordinator linked to write it, the API to read it only, no other function to either (issue 57)", () => {
    // Prepare: the bucket, blocked from public access, no CORS (nothing in a browser reads it directly).
    const bucket = one("aws:s3/bucket:Bucket", "ReportsBucket");
    const block = one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "ReportsPublicAccessBlock").inputs;
    expect([
      block.blockPublicAcls,
      block.blockPublicPolicy,
      block.ignorePublicAcls,
      block.restrictPublicBuckets,
    ]).toEqual([true, true, true, true]);
    expect(
      ofType("aws:s3/bucketCorsConfiguration:BucketCorsConfiguration").filter((c) => c.name.startsWith("Reports")),
    ).toEqual([]);
    // Assess: what each handler is given (the bucket's name under Reports to write, ReportsRead to read).
    const linked = (name: string) =>
      Object.entries(links)
        .filter(([, l]) => name in l)
        .map(([handler]) => handler);
    expect(linked("Reports")).toEqual([WORKERS.coordinator.handler]);
    expect(linked("ReportsRead")).toEqual(["functions/api/lambda.handler"]);
    expect(links[WORKERS.coordinator.handler]!.Reports).toMatchObject({ name: bucket.inputs.bucket });
    expect(links["functions/api/lambda.handler"]!.ReportsRead).toMatchObject({ name: bucket.inputs.bucket });
    // And what IAM grants: objects written by the coordinator only; read and listed by it and the API; nothing for the
    // others.
    const s3Grants = (action: string) =>
      ofType("aws:iam/role:Role")
        .map((r) => r.name)
        .filter((role) => /^(ApiRole|\w+QueueSubscriber\w*FunctionRole)$/.test(role))
        .filter((role) => grants(role, action).includes("ReportsBucket"))
        .map((role) => role.replace(/QueueSubscriber\w*FunctionRole$/, ""))
        .sort();
    expect(s3Grants("s3:PutObject")).toEqual(["Coordinator"]);
    expect(s3Grants("s3:DeleteObject")).toEqual(["Coordinator"]);
    expect(s3Grants("s3:GetObject")).toEqual(["ApiRole", "Coordinator"]);
    expect(s3Grants("s3:ListBucket")).toEqual(["ApiRole", "Coordinator"]);
    expect(policyOf("ApiRole").filter((st) => st.actions.some((a) => a.startsWith("s3:")))).toEqual([
      expect.objectContaining({
        actions: ["s3:GetObject", "s3:ListBucket"],
        resources: [expect.stringMatching(/:ReportsBucket$/), expect.stringMatching(/:ReportsBucket\/\*$/)],
      }),
    ]);
    // The coordinator renders the plots with resvg, a native addon: installed beside its bundle
    // (else esbuild cannot bundle the handler and "bundles every handler" above fails).
    expect(builds).toContain(WORKERS.coordinator.handler);
  });

  it("runs the policy worker as one ECS task on one GPU instance, behind a balancer that checks /healthz", () => {
    // The instance: the ECS GPU AMI, one instance (min = max = 1), joined to the cluster with GPU support.
    const launch = one("aws:ec2/launchTemplate:LaunchTemplate", "PolicyLaunchTemplate").inputs;
    expect(launch.instanceType).toBe(GPU_ENDPOINT.instanceType);
    expect(Buffer.from(launch.userData, "base64").toString()).toMatch(/ECS_CLUSTER=.*\n.*ECS_ENABLE_GPU_SUPPORT=true/);
    const asg = one("aws:autoscaling/group:Group", "PolicyInstances").inputs;
    expect([asg.minSize, asg.maxSize, asg.desiredCapacity]).toEqual([1, 1, 1]);
    // The task: one GPU, the worker's port, the image from its own repository, the token from Secrets Manager only.
    const task = one("aws:ecs/taskDefinition:TaskDefinition", "PolicyWorkerTask").inputs;
    const [container] = JSON.parse(task.containerDefinitions);
    expect(container.resourceRequirements).toEqual([{ type: "GPU", value: "1" }]);
    expect(container.portMappings[0].containerPort).toBe(GPU_ENDPOINT.port);
    expect(container.image).toMatch(/dkr\.ecr\..*policyworkerimage:latest$/);
    expect(container.secrets).toEqual([
      { name: "HARNESS_S_WORKER_TOKEN", valueFrom: expect.stringMatching(/:PolicyWorkerToken$/) },
    ]);
    expect(JSON.stringify(container.command) + JSON.stringify(container.environment ?? [])).not.toMatch(/token/i);
    expect(container.mountPoints).toContainEqual({ sourceVolume: "models", containerPath: "/models", readOnly: true });
    // One task, never two at once (open episodes and adapters live in the worker's memory).
    const service = one("aws:ecs/service:Service", "PolicyWorkerService").inputs;
    expect([service.desiredCount, service.deploymentMaximumPercent, service.deploymentMinimumHealthyPercent]).toEqual([
      1, 100, 0,
    ]);
    // The balancer forwards to the worker's port and checks its unauthenticated health route.
    const target = one("aws:lb/targetGroup:TargetGroup", "PolicyTargets").inputs;
    expect(target.port).toBe(GPU_ENDPOINT.port);
    expect(target.healthCheck.path).toBe("/healthz");
    expect(one("aws:lb/listener:Listener", "PolicyListener").inputs.defaultActions[0]).toMatchObject({
      type: "forward",
      targetGroupArn: expect.stringMatching(/:PolicyTargets$/),
    });
    // The instance takes the worker's port from the balancer only.
    const instanceGroup = one("aws:ec2/securityGroup:SecurityGroup", "PolicyInstanceGroup").inputs;
    expect(instanceGroup.ingress).toEqual([
      expect.objectContaining({
        fromPort: GPU_ENDPOINT.port,
        toPort: GPU_ENDPOINT.port,
        securityGroups: ["PolicyBalancerGroup-id"],
      }),
    ]);
    expect(instanceGroup.ingress[0].cidrBlocks ?? []).toEqual([]);
  });

  it("keeps the GPU endpoint off the internet: no public plain-HTTP listener, the functions that carry its token inside the VPC (issue 67 item 15)", () => {
    const balancers = ofType("aws:lb/loadBalancer:LoadBalancer");
    const groups = new Map(ofType("aws:ec2/securityGroup:SecurityGroup").map((g) => [`${g.name}-id`, g.inputs]));
    const privateSubnets = ofType("aws:ec2/subnet:Subnet")
      .filter((s) => /Private/.test(s.name))
      .map((s) => `${s.name}-id`);
    expect(privateSubnets.length).toBeGreaterThanOrEqual(2);
    // Every listener that speaks plain HTTP sits on an internal balancer, in private subnets, open to no CIDR.
    for (const listener of ofType("aws:lb/listener:Listener").filter((l) => l.inputs.protocol === "HTTP")) {
      const balancer = balancers.find((b) => listener.inputs.loadBalancerArn.endsWith(`:${b.name}`))!;
      expect(balancer.inputs.internal, `${balancer.name} is internal`).toBe(true);
      expect(
        balancer.inputs.subnets.every((s: string) => privateSubnets.includes(s)),
        `${balancer.name} in private subnets`,
      ).toBe(true);
      for (const id of balancer.inputs.securityGroups)
        for (const rule of groups.get(id)?.ingress ?? [])
          expect([...(rule.cidrBlocks ?? []), ...(rule.ipv6CidrBlocks ?? [])]).toEqual([]);
    }
    // The instance has no public address either: its subnets are the private ones.
    expect(
      one("aws:autoscaling/group:Group", "PolicyInstances").inputs.vpcZoneIdentifiers.every((s: string) =>
        privateSubnets.includes(s),
      ),
    ).toBe(true);
    // Every function given the endpoint's token runs in the private subnets, in the one group the balancer takes.
    const balancerGroup = one("aws:ec2/securityGroup:SecurityGroup", "PolicyBalancerGroup").inputs;
    const carriers = Object.entries(links)
      .filter(([, linked]) => "PolicyEndpointToken" in linked)
      .map(([handler]) => handler);
    expect(carriers.sort()).toEqual([WORKERS.coordinator.handler, WORKERS.dispatch.handler].sort());
    for (const fn of ofType("aws:lambda/function:Function").filter((f) =>
      carriers.some((h) => f.name.startsWith(h === WORKERS.dispatch.handler ? "DispatchQueue" : "CoordinatorQueue")),
    )) {
      expect(fn.inputs.vpcConfig?.subnetIds, fn.name).toEqual(privateSubnets.filter((s) => /PolicyVpc/.test(s)));
      expect(balancerGroup.ingress.flatMap((r: { securityGroups?: string[] }) => r.securityGroups ?? [])).toEqual(
        fn.inputs.vpcConfig.securityGroupIds,
      );
    }
    // DynamoDB from the private subnets without the NAT.
    expect(one("aws:ec2/vpcEndpoint:VpcEndpoint", "PolicyDynamoEndpoint").inputs).toMatchObject({
      vpcEndpointType: "Gateway",
      serviceName: "com.amazonaws.us-east-1.dynamodb",
    });
  });

  it("serves the declared model from its folder on the instance, under its name (issue 57, item 2)", () => {
    const [model] = SERVED_MODELS;
    expect(
      Buffer.from(
        one("aws:ec2/launchTemplate:LaunchTemplate", "PolicyLaunchTemplate").inputs.userData,
        "base64",
      ).toString(),
    ).toContain(`mkdir -p ${model.folder} `);
    const task = one("aws:ecs/taskDefinition:TaskDefinition", "PolicyWorkerTask").inputs;
    expect(task.volumes).toContainEqual({ name: "models", hostPath: model.folder });
    const [container] = JSON.parse(task.containerDefinitions);
    expect(container.command).toEqual(["--model", "/models", "--served-model-name", model.name, "--device", "cuda"]);
  });

  it("links each function to exactly what it uses (issue 57, item 5): the report bucket to the coordinator (write) and the API (ReportsRead), the GPU endpoint to dispatch and the coordinator (and its URL, never its token, to the API); none of the others", () => {
    const shared = ["Usage", "UsageDays"];
    const expected: Record<string, string[]> = {
      "functions/api/lambda.handler": [
        ...[
          "ApiKeys",
          "BootstrapAdminKeyHash",
          "CoordinatorQueue",
          "Decisions",
          "DispatchQueue",
          "EndpointCidrs",
          "ExperimentSteps",
          "Experiments",
          "GatewayConfig",
        ],
        ...[
          "GatewayEpisodes",
          "KeyEvents",
          "Keys",
          "LlmApiKey",
          "PolicyEndpointUrl",
          "PolicyEndpoints",
          "PolicyGpuEndpoint",
          "PoolEvolutions",
          "Pools",
          "PriceList",
        ],
        ...["Processed", "ProfileQueue", "Profiles"],
        ...["ReportsRead", "RescueJobs", "Rollouts", "VoterKeys", "VoterPanel", ...shared],
      ],
      [WORKERS.profile.handler]: ["Processed", "Profiles", ...shared],
      [WORKERS.vote.handler]: ["Ballots", "LlmApiKey", "VoterKeys", "VoterPanel", ...shared],
      [WORKERS.dispatch.handler]: [
        ...[
          "DispatchQueue",
          "EndpointCidrs",
          "PolicyEndpointToken",
          "PolicyEndpointUrl",
          "PolicyEndpoints",
          "PolicyGpuEndpoint",
          "Pools",
          "Processed",
          "RescueJobs",
          "Rollouts",
          "RunningPlaces",
        ],
        ...shared,
      ],
      [DISPATCH_DEAD_LETTERS.handler]: ["RescueJobs", "Rollouts"],
      [WORKERS.coordinator.handler]: [
        ...[
          "Ballots",
          "CoordinatorQueue",
          "DispatchQueue",
          "EndpointCidrs",
          "ExperimentSteps",
          "Experiments",
          "LlmApiKey",
          "PolicyEndpointToken",
          "PolicyEndpointUrl",
        ],
        ...[
          "PolicyEndpoints",
          "PolicyGpuEndpoint",
          "PoolEvolutions",
          "PoolProposer",
          "Pools",
          "Profiles",
          "Reports",
          "Rollouts",
          "VoteQueue",
          "VoterKeys",
          "VoterPanel",
          ...shared,
        ],
      ],
    };
    expect(Object.fromEntries(Object.entries(links).map(([handler, l]) => [handler, Object.keys(l).sort()]))).toEqual(
      Object.fromEntries(Object.entries(expected).map(([handler, names]) => [handler, [...names].sort()])),
    );
    // The models the API lists are the ones the endpoint serves: one, under the name its worker is started with.
    const [container] = JSON.parse(
      one("aws:ecs/taskDefinition:TaskDefinition", "PolicyWorkerTask").inputs.containerDefinitions,
    );
    expect(SERVED_MODELS.map((m) => m.name)).toEqual([
      container.command[container.command.indexOf("--served-model-name") + 1],
    ]);
  });

  it("lets the task read only its token secret, links the endpoint's URL to dispatch, the coordinator and the API (which offers callers' environments where one is configured), and its token to dispatch and the coordinator only", () => {
    const statements = one("aws:iam/role:Role", "PolicyTaskExecutionRole").inputs.inlinePolicies.flatMap(
      (p: { policy: string }) => JSON.parse(p.policy).Statement,
    );
    expect(statements).toEqual([
      {
        Effect: "Allow",
        Action: ["secretsmanager:GetSecretValue"],
        Resource: [expect.stringMatching(/:PolicyWorkerToken$/)],
      },
    ]);
    const linked = Object.entries(links)
      .filter(([, l]) => "PolicyGpuEndpoint" in l)
      .map(([handler]) => handler)
      .sort();
    expect(linked).toEqual(
      ["functions/api/lambda.handler", WORKERS.coordinator.handler, WORKERS.dispatch.handler].sort(),
    );
    expect(links[WORKERS.dispatch.handler]!.PolicyGpuEndpoint!.url).toBe(
      "http://PolicyBalancer.mock.elb.amazonaws.com",
    );
    // The API calls nothing at the endpoint: it has no token to.
    expect(
      Object.entries(links)
        .filter(([, l]) => "PolicyEndpointToken" in l)
        .map(([handler]) => handler)
        .sort(),
    ).toEqual([WORKERS.coordinator.handler, WORKERS.dispatch.handler].sort());
    // The hand-set secrets stay linked beside it, as the override for an endpoint run elsewhere.
    expect(Object.keys(links[WORKERS.dispatch.handler]!)).toEqual(
      expect.arrayContaining(["PolicyEndpointUrl", "PolicyEndpointToken"]),
    );
  });
});

describe("alarms and the dashboard (issue 58, stacks/observability.ts)", () => {
  const topicArn = "arn:aws:mock:us-east-1:123456789012:Alarms";
  const alarm = (name: string) => one("aws:cloudwatch/metricAlarm:MetricAlarm", name).inputs;
  const title = (worker: string) => worker[0]!.toUpperCase() + worker.slice(1);
  const lambda = (name: string) =>
    ofType("aws:lambda/function:Function").find((f) =>
      f.name.startsWith(
        name === "Api"
          ? "ApiFunction"
          : name === "DispatchDeadLetters"
            ? "DispatchDlqSubscriber"
            : `${name}QueueSubscriber`,
      ),
    )!.inputs;
  /** Each alarm fires into the topic and says so again when it clears. */
  const notifies = { period: ALARM_PERIOD_SECONDS, alarmActions: [topicArn], okActions: [topicArn] };

  it("alarms on each DLQ's depth (the queue its redrive policy names): any message", () => {
    for (const worker of Object.keys(WORKERS)) {
      const queue = one("aws:sqs/queue:Queue", `${title(worker)}QueueQueue`).inputs;
      const dlq = String(JSON.parse(queue.redrivePolicy).deadLetterTargetArn).split(":").pop()!;
      expect(dlq).toBe(`${title(worker)}DlqQueue`); // the mock's ARNs end with the logical name, AWS's with the queue's
      expect(alarm(`${title(worker)}DlqDepthAlarm`), worker).toMatchObject({
        namespace: "AWS/SQS",
        metricName: "ApproximateNumberOfMessagesVisible",
        dimensions: { QueueName: dlq },
        statistic: "Maximum",
        comparisonOperator: "GreaterThanThreshold",
        threshold: 0,
        evaluationPeriods: ALARM_EVALUATION_PERIODS.deadLetters,
        treatMissingData: "notBreaching",
        ...notifies,
      });
    }
  });

  it("alarms on each queue's oldest message past every retry: (retry + 1) visibility timeouts", () => {
    expect(Object.fromEntries(Object.entries(WORKERS).map(([worker, w]) => [worker, oldestMessageSeconds(w)]))).toEqual(
      {
        profile: 120,
        vote: 240,
        dispatch: 1440,
        coordinator: 2880,
      },
    );
    for (const [worker, w] of Object.entries(WORKERS)) {
      const queue = one("aws:sqs/queue:Queue", `${title(worker)}QueueQueue`).inputs;
      expect(alarm(`${title(worker)}QueueAgeAlarm`), worker).toMatchObject({
        namespace: "AWS/SQS",
        metricName: "ApproximateAgeOfOldestMessage",
        dimensions: { QueueName: queue.name },
        statistic: "Maximum",
        comparisonOperator: "GreaterThanThreshold",
        threshold: (w.retry + 1) * queue.visibilityTimeoutSeconds,
        evaluationPeriods: ALARM_EVALUATION_PERIODS.oldestMessage,
        ...notifies,
      });
    }
  });

  it("alarms on each function's errors and throttles: any", () => {
    const functions = ["Api", ...Object.keys(WORKERS).map(title), "DispatchDeadLetters"];
    expect(functions).toHaveLength(ofType("aws:lambda/function:Function").length);
    for (const name of functions)
      for (const metric of ["Errors", "Throttles"])
        expect(alarm(`${name}${metric}Alarm`), `${name} ${metric}`).toMatchObject({
          namespace: "AWS/Lambda",
          metricName: metric,
          dimensions: { FunctionName: lambda(name).name },
          statistic: "Sum",
          comparisonOperator: "GreaterThanThreshold",
          threshold: 0,
          evaluationPeriods: ALARM_EVALUATION_PERIODS.functionFaults,
          treatMissingData: "notBreaching",
          ...notifies,
        });
  });

  it("alarms when the GPU endpoint's balancer has no healthy target (its /healthz check) for ten minutes, missing data too", () => {
    expect(alarm("PolicyEndpointHealthAlarm")).toMatchObject({
      namespace: "AWS/ApplicationELB",
      metricName: "HealthyHostCount",
      dimensions: {
        TargetGroup: "mock/PolicyTargets/0123456789abcdef",
        LoadBalancer: "mock/PolicyBalancer/0123456789abcdef",
      },
      statistic: "Minimum",
      comparisonOperator: "LessThanThreshold",
      threshold: 1,
      evaluationPeriods: 10,
      treatMissingData: "breaching",
      ...notifies,
    });
    expect(ALARM_EVALUATION_PERIODS.gpuHealth * ALARM_PERIOD_SECONDS).toBe(600);
  });

  it("has no other alarm, and every one notifies the Alarms topic, which emails the AlarmEmail secret's address", () => {
    const alarms = ofType("aws:cloudwatch/metricAlarm:MetricAlarm");
    expect(alarms).toHaveLength(Object.keys(WORKERS).length * 2 + (Object.keys(WORKERS).length + 2) * 2 + 1);
    for (const a of alarms) expect(a.inputs, a.name).toMatchObject(notifies);
    expect(ofType("aws:sns/topic:Topic").map((t) => t.name)).toEqual(["Alarms"]);
    expect(ofType("aws:sns/topicSubscription:TopicSubscription").map((s) => s.inputs)).toEqual([
      { topic: topicArn, protocol: "email", endpoint: ALARM_EMAIL },
    ]);
    // The address is configuration: unset (the secret's placeholder) or blank is no subscription, a non-address is
    // refused.
    expect(alarmEmailAddress("unset")).toBeUndefined();
    expect(alarmEmailAddress("  ")).toBeUndefined();
    expect(alarmEmailAddress(` ${ALARM_EMAIL}\n`)).toBe(ALARM_EMAIL);
    expect(() => alarmEmailAddress("ops at example")).toThrow(/not an email address/);
  });

  it("counts rollouts, rescue outcomes and spend from the functions' structured log lines (metric filters)", () => {
    const filters = ofType("aws:cloudwatch/logMetricFilter:LogMetricFilter");
    const logGroup = (name: string) => lambda(name).loggingConfig.logGroup;
    expect(one("aws:cloudwatch/logMetricFilter:LogMetricFilter", "RolloutsMetricFilter").inputs).toMatchObject({
      logGroupName: logGroup("Dispatch"),
      pattern: '{ $.event = "queue.record" && $.function = "dispatch" && $.outcome = * }',
      metricTransformation: { namespace: "Harness-S/test", name: "Rollouts", value: "1" },
    });
    expect(one("aws:cloudwatch/logMetricFilter:LogMetricFilter", "RescueOutcomesMetricFilter").inputs).toMatchObject({
      logGroupName: logGroup("Dispatch"),
      pattern: '{ $.event = "queue.record" && $.function = "dispatch" && $.jobId = "rsc_*" && $.outcome = * }',
      metricTransformation: {
        namespace: "Harness-S/test",
        name: "RescueOutcomes",
        value: "1",
        dimensions: { Outcome: "$.outcome" },
      },
    });
    const spend = filters.filter((f) => f.inputs.metricTransformation.name === "CostOfGoodsUsd");
    expect(spend.map((f) => f.inputs.logGroupName).sort()).toEqual(
      ["Api", ...Object.keys(WORKERS).map(title), "DispatchDeadLetters"].map(logGroup).sort(),
    );
    for (const f of spend)
      expect(f.inputs).toMatchObject({
        pattern: "{ $.costOfGoodsUsd > 0 }",
        metricTransformation: { value: "$.costOfGoodsUsd" },
      });
    expect(filters).toHaveLength(2 + spend.length);
  });

  it("draws one dashboard: route latency, rollouts/s, rescue outcomes, spend, the queues, the functions' faults and every alarm", () => {
    const dashboard = one("aws:cloudwatch/dashboard:Dashboard", "Dashboard").inputs;
    expect(dashboard.dashboardName).toBe("harness-s-test");
    // biome-ignore lint/suspicious/noExplicitAny: the dashboard body is CloudWatch's JSON
    const widgets = JSON.parse(dashboard.dashboardBody).widgets as { type: string; properties: Record<string, any> }[];
    const widget = (t: string) => {
      const found = widgets.filter((w) => w.properties.title === t);
      expect(found, t).toHaveLength(1);
      return found[0]!.properties;
    };
    expect(widgets.map((w) => w.properties.title).sort()).toEqual(Object.values(DASHBOARD_WIDGETS).sort());
    const api = lambda("Api").name;
    expect(widget(DASHBOARD_WIDGETS.routeLatency).metrics).toEqual([
      ["AWS/Lambda", "Duration", "FunctionName", api, { stat: "p50", label: "p50" }],
      ["AWS/Lambda", "Duration", "FunctionName", api, { stat: "p99", label: "p99" }],
    ]);
    expect(widget(DASHBOARD_WIDGETS.rollouts).metrics).toEqual([
      [{ id: "perSecond", expression: "rollouts / PERIOD(rollouts)", label: "rollouts/s" }],
      ["Harness-S/test", "Rollouts", { id: "rollouts", stat: "Sum", visible: false }],
    ]);
    expect(widget(DASHBOARD_WIDGETS.rescueOutcomes).metrics[0][0].expression).toBe(
      `SEARCH('{"Harness-S/test",Outcome} MetricName="RescueOutcomes"', 'Sum', 300)`,
    );
    expect(widget(DASHBOARD_WIDGETS.spend).metrics.map((m: unknown[]) => m.slice(0, 2))).toEqual([
      ["Harness-S/test", "CostOfGoodsUsd"],
      ["AWS/Billing", "EstimatedCharges"],
    ]);
    const queueNames = Object.keys(WORKERS).map((w) => one("aws:sqs/queue:Queue", `${title(w)}QueueQueue`).inputs.name);
    expect(widget(DASHBOARD_WIDGETS.queues).metrics.map((m: string[]) => m[3])).toEqual(queueNames);
    expect(widget(DASHBOARD_WIDGETS.deadLetters).metrics.map((m: string[]) => m[3])).toEqual(
      Object.keys(WORKERS).map((w) => `${title(w)}DlqQueue`),
    );
    expect(widget(DASHBOARD_WIDGETS.faults).metrics).toHaveLength(2 * ofType("aws:lambda/function:Function").length);
    const alarmArns = ofType("aws:cloudwatch/metricAlarm:MetricAlarm").map(
      (a) => `arn:aws:mock:us-east-1:123456789012:${a.name}`,
    );
    expect([...widget(DASHBOARD_WIDGETS.alarms).alarms].sort()).toEqual(alarmArns.sort());
  });
});
