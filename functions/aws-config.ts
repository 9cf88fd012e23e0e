import { Resource } from "sst";
import { z } from "zod";
import { tableSpecs, type TableNames } from "@harness-s/adapters";

const QUEUES = { profile: "ProfileQueue", dispatch: "DispatchQueue", vote: "VoteQueue", coordinator: "CoordinatorQueue" } as const;

/** Table and queue names from SST's linked resources, parsed once at cold start. */
export const AwsConfig = z.object({
  tables: z.object(Object.fromEntries(tableSpecs.map((t) => [t.name, z.string().min(1)])) as Record<TableNames extends Record<infer K, string> ? K : never, z.ZodString>),
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
});
export type AwsConfig = z.infer<typeof AwsConfig> & { tables: TableNames };

/**
 * Only what a function is linked to is present; a missing table fails the cold start with its name.
 * SST's `Resource` throws on a name the function is not linked to, so each name is asked with `in` first.
 */
export function awsConfigFromResources(): AwsConfig {
  const linked = (name: string) => (name in Resource ? (Resource as unknown as Record<string, { name?: string; url?: string; value?: string }>)[name] : undefined);
  const secret = (name: string) => {
    const value = linked(name)?.value;
    return value && value !== "unset" ? value : undefined;
  };
  return AwsConfig.parse({
    tables: Object.fromEntries(tableSpecs.map((t) => [t.name, linked(t.name)?.name ?? `unlinked-${t.name}`])),
    queues: Object.fromEntries(Object.entries(QUEUES).map(([k, name]) => [k, linked(name)?.url])),
    // The secret, when set, overrides the managed GPU endpoint's URL (an endpoint run elsewhere).
    policyEndpointUrl: secret("PolicyEndpointUrl") ?? linked("PolicyGpuEndpoint")?.url,
    policyEndpointToken: secret("PolicyEndpointToken"),
    llmApiKey: secret("LlmApiKey"),
    voterPanel: secret("VoterPanel"),
    voterKeys: secret("VoterKeys"),
  }) as AwsConfig;
}
