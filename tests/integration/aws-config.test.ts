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
const { awsConfigFromResources, deployedOutbound } = await import("../../functions/aws-config.ts");

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
    (globalThis as { __SST_RESOURCE_RAW__?: Record<string, unknown> }).__SST_RESOURCE_RAW__!.PolicyEndpointUrl = {
      value: "https://elsewhere.example",
    };
    expect(awsConfigFromResources().policyEndpointUrl).toBe("https://elsewhere.example");
  });

  it("reads the EndpointCidrs secret (a JSON array of CIDRs) into the outbound guard's allowlist; a bad one fails the cold start naming it (issue 55, item 6)", () => {
    const raw = (globalThis as { __SST_RESOURCE_RAW__?: Record<string, unknown> }).__SST_RESOURCE_RAW__!;
    expect(deployedOutbound(awsConfigFromResources())).toEqual({ allowLoopback: false, allowCidrs: [] });
    raw.EndpointCidrs = { value: '["10.0.0.0/8", "FD00:0::/8"]' };
    expect(deployedOutbound(awsConfigFromResources())).toEqual({
      allowLoopback: false,
      allowCidrs: ["10.0.0.0/8", "fd00::/8"],
    });
    raw.EndpointCidrs = { value: '["10.1.0.0/8"]' };
    expect(() => awsConfigFromResources()).toThrow(
      /"10\.1\.0\.0\/8": bits are set past the \/8 prefix: write 10\.0\.0\.0\/8\n.*at endpointCidrs\[0\]/,
    );
    raw.EndpointCidrs = { value: "10.0.0.0/8" };
    expect(() => awsConfigFromResources()).toThrow(/the EndpointCidrs secret is not JSON/);
    raw.EndpointCidrs = { value: JSON.stringify(Array.from({ length: 65 }, (_, i) => `10.${i}.0.0/16`)) };
    expect(() => awsConfigFromResources()).toThrow(/at most 64 CIDRs\n.*at endpointCidrs/);
    delete raw.EndpointCidrs;
  });

  it("reads the PoolProposer secret (the LLM proposer of pool evolutions) when set; unset, none (issue 55, item 4)", () => {
    const raw = (globalThis as { __SST_RESOURCE_RAW__?: Record<string, unknown> }).__SST_RESOURCE_RAW__!;
    expect(awsConfigFromResources().poolProposer).toBeUndefined();
    raw.PoolProposer = { value: '{"baseUrl": "https://llm.example.com/v1", "model": "m"}' };
    expect(awsConfigFromResources().poolProposer).toEqual({
      baseUrl: "https://llm.example.com/v1",
      model: "m",
      maxCalls: 40,
    });
    raw.PoolProposer = { value: '{"baseUrl": "ftp://llm.example.com", "model": "m"}' };
    expect(() => awsConfigFromResources()).toThrow(/at poolProposer\.baseUrl/);
    delete raw.PoolProposer;
  });
});
