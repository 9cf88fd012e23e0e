import { Resource } from "sst";
import { z } from "zod";
import { PriceList } from "@harness-s/core/billing";
import { EndpointCidrs } from "@harness-s/core/outbound";
import { tableSpecs, type TableNames } from "@harness-s/adapters/dynamo";
import type { OutboundPolicy } from "@harness-s/adapters/net";
import { GatewayConfig } from "./api/gateway-config.ts";
import { PoolProposerConfig } from "./pool-proposer.ts";

const QUEUES = {
  profile: "ProfileQueue",
  dispatch: "DispatchQueue",
  vote: "VoteQueue",
  coordinator: "CoordinatorQueue",
} as const;

/** Table and queue names from SST's linked resources, parsed once at cold start. */
export const AwsConfig = z.object({
  tables: z.object(
    Object.fromEntries(tableSpecs.map((t) => [t.name, z.string().min(1)])) as Record<
      TableNames extends Record<infer K, string> ? K : never,
      z.ZodString
    >,
  ),
  queues: z.object({
    profile: z.string().url().optional(),
    dispatch: z.string().url().optional(),
    vote: z.string().url().optional(),
    coordinator: z.string().url().optional(),
  }),
  policyEndpointUrl: z.string().url().optional(),
  /** Bearer token of a protocol-v2 policy worker. */
  policyEndpointToken: z.string().min(1).optional(),
  llmApiKey: z.string().min(1).optional(),
  /** The voter panel's JSON document and the JSON object of its keys (see `panelFromSecrets`). */
  voterPanel: z.string().min(1).optional(),
  voterKeys: z.string().min(1).optional(),
  /** The Rank-1 gateway (the `GatewayConfig` secret, JSON); absent: its routes answer 501. */
  gateway: GatewayConfig.optional(),
  /**
   * The function's configured memory in GB (the runtime's AWS_LAMBDA_FUNCTION_MEMORY_SIZE): its GB-seconds are metered
   * with it.
   */
  memoryGb: z.number().positive(),
  /** What the deployment pays its providers (the `PriceList` secret, JSON; absent: the defaults). */
  priceList: PriceList.default(PriceList.parse({})),
  /**
   * Private blocks callers' endpoints and environments may be in (the `EndpointCidrs` secret, a
   * JSON array of CIDRs; absent: none, every private address refused). Instance metadata,
   * loopback, unspecified, multicast and broadcast addresses stay refused whatever it holds.
   */
  endpointCidrs: EndpointCidrs.default([]),
  /**
   * The bucket of experiments' reports and plots: the coordinator's `Reports` (write), the API's `ReportsRead` (read);
   * absent: none kept.
   */
  reportBucket: z.string().min(1).optional(),
  /**
   * The LLM proposer of pool evolutions (the `PoolProposer` secret, JSON; its key `LlmApiKey`); absent: the template
   * proposer.
   */
  poolProposer: PoolProposerConfig.optional(),
  /**
   * The SHA-256 hex digest of the deployment's first admin secret (the `BootstrapAdminKeyHash`
   * secret, linked to the API only); absent: no admin key is made (`adminKeyBootstrap`).
   */
  bootstrapAdminKeyHash: z
    .string()
    .trim()
    .toLowerCase()
    .regex(
      /^[0-9a-f]{64}$/,
      "the BootstrapAdminKeyHash secret must be the SHA-256 hex digest of the admin secret: 64 hex characters (docs/operations.md, Deploying)",
    )
    .optional(),
});
export type AwsConfig = z.infer<typeof AwsConfig> & { tables: TableNames };

/**
 * Only what a function is linked to is present; a missing table fails the cold start with its name.
 * SST's `Resource` throws on a name the function is not linked to, so each name is asked with `in` first.
 */
export function awsConfigFromResources(): AwsConfig {
  const linked = (name: string) =>
    name in Resource
      ? (Resource as unknown as Record<string, { name?: string; url?: string; value?: string }>)[name]
      : undefined;
  const secret = (name: string) => {
    const value = linked(name)?.value;
    return value && value !== "unset" ? value : undefined;
  };
  const parsed = AwsConfig.safeParse({
    tables: Object.fromEntries(tableSpecs.map((t) => [t.name, linked(t.name)?.name ?? `unlinked-${t.name}`])),
    queues: Object.fromEntries(Object.entries(QUEUES).map(([k, name]) => [k, linked(name)?.url])),
    // The secret, when set, overrides the managed GPU endpoint's URL (an endpoint run elsewhere).
    policyEndpointUrl: secret("PolicyEndpointUrl") ?? linked("PolicyGpuEndpoint")?.url,
    policyEndpointToken: secret("PolicyEndpointToken"),
    llmApiKey: secret("LlmApiKey"),
    voterPanel: secret("VoterPanel"),
    voterKeys: secret("VoterKeys"),
    gateway: jsonSecret("GatewayConfig", secret("GatewayConfig")),
    priceList: jsonSecret("PriceList", secret("PriceList")),
    endpointCidrs: jsonSecret("EndpointCidrs", secret("EndpointCidrs")),
    poolProposer: jsonSecret("PoolProposer", secret("PoolProposer")),
    reportBucket: linked("Reports")?.name ?? linked("ReportsRead")?.name,
    bootstrapAdminKeyHash: secret("BootstrapAdminKeyHash"),
    memoryGb: Number(process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? 1024) / 1024,
  });
  // Each problem on a line with where it is (`→ at endpointCidrs[0]`): the cold start's log says what to fix.
  if (!parsed.success) throw new Error(`the function's configuration is not valid:\n${z.prettifyError(parsed.error)}`);
  return parsed.data as AwsConfig;
}

/** A secret holding JSON, parsed (zod checks its shape); one that is not JSON fails the cold start with its name. */
function jsonSecret(name: string, value: string | undefined): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch (err) {
    throw new Error(`the ${name} secret is not JSON: ${(err as Error).message}`);
  }
}

/**
 * What a deployed function's outbound guard lets callers' endpoints and environments reach:
 * public addresses and the operator's `EndpointCidrs`; never loopback (a Lambda's runtime API
 * listens there).
 */
export const deployedOutbound = (config: Pick<AwsConfig, "endpointCidrs">): OutboundPolicy => ({
  allowLoopback: false,
  allowCidrs: config.endpointCidrs,
});
