import { Resource } from "sst";
import { z } from "zod";
import type { TableNames } from "@harness-s/adapters";

/** Table and queue names from SST's linked resources, parsed once at cold start. */
export const AwsConfig = z.object({
  tables: z.object({
    Pools: z.string().min(1),
    Profiles: z.string().min(1),
    Decisions: z.string().min(1),
    ApiKeys: z.string().min(1),
    Usage: z.string().min(1),
    Processed: z.string().min(1),
    Rollouts: z.string().min(1),
    RescueJobs: z.string().min(1),
  }),
  profileQueueUrl: z.string().url().optional(),
});
export type AwsConfig = z.infer<typeof AwsConfig> & { tables: TableNames };

export function awsConfigFromResources(): AwsConfig {
  const r = Resource as unknown as Record<string, { name?: string; url?: string } | undefined>;
  return AwsConfig.parse({
    tables: Object.fromEntries(["Pools", "Profiles", "Decisions", "ApiKeys", "Usage", "Processed", "Rollouts", "RescueJobs"].map((t) => [t, r[t]?.name])),
    profileQueueUrl: r.ProfileQueue?.url,
  });
}
