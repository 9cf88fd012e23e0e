import { describe, expect, it } from "vitest";

// SST's `Resource` reads a function's links once per process (from SST_RESOURCE_* variables), so
// this file sets them before importing the config reader; it runs isolated (integration project).
const link = (name: string, value: unknown) => {
  process.env[`SST_RESOURCE_${name}`] = JSON.stringify(value);
};
link("App", { name: "harness-s", stage: "test" });
for (const table of ["Pools", "Rollouts", "RescueJobs"]) link(table, { name: `test-${table}` });
link("DispatchQueue", { url: "https://sqs.example/dispatch" });
link("PolicyEndpointToken", { value: "worker-token" });
link("PolicyEndpointUrl", { value: "unset" });
link("PolicyGpuEndpoint", { url: "http://policy-balancer.example" });
const { awsConfigFromResources } = await import("../../functions/aws-config.ts");

describe("a Lambda's configuration from its SST links", () => {
  it("takes the managed GPU endpoint's URL, reads unlinked tables and secrets as absent instead of throwing", () => {
    const config = awsConfigFromResources();
    expect(config.policyEndpointUrl).toBe("http://policy-balancer.example");
    expect(config.policyEndpointToken).toBe("worker-token");
    expect(config.tables.Pools).toBe("test-Pools");
    expect(config.tables.Ballots).toBe("unlinked-Ballots");
    expect(config.llmApiKey).toBeUndefined();
    expect(config.queues.dispatch).toBe("https://sqs.example/dispatch");
  });

  it("lets the PolicyEndpointUrl secret, once set, override the managed endpoint", () => {
    (globalThis as { __SST_RESOURCE_RAW__?: Record<string, unknown> }).__SST_RESOURCE_RAW__!.PolicyEndpointUrl = { value: "https://elsewhere.example" };
    expect(awsConfigFromResources().policyEndpointUrl).toBe("https://elsewhere.example");
  });
});
