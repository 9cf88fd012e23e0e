import { UpdateSettings } from "../rollout/update-settings.ts";
import { z } from "zod";
import { PolicyObservation, Rollout } from "../rollout/types.ts";

/**
 * The policy endpoint's HTTP protocol (the managed GPU endpoint in the cloud, `harness-s
 * policy-serve` locally): create a policy, sample one action, apply one update.
 *
 * - `PUT  /v1/policies/{id}`         → {@link PolicyState} (creates it from the initial weights; idempotent)
 * - `GET  /v1/policies/{id}`         → {@link PolicyState}
 * - `POST /v1/policies/{id}/act`     {@link ActRequest} → {@link ActResponse}
 * - `POST /v1/policies/{id}/update`  {@link UpdateRequest} → {@link UpdateResponse} (409 if `baseVersion` is stale)
 * - `DELETE /v1/policies/{id}`
 */
export const PolicyState = z.object({ policyId: z.string().min(1), version: z.number().int().min(0) });
export type PolicyState = z.infer<typeof PolicyState>;

export const ActRequest = z.object({
  observation: PolicyObservation,
  seed: z.number().int(),
  version: z.number().int().min(0).optional(),
});
export type ActRequest = z.infer<typeof ActRequest>;

export const ActResponse = z.object({
  action: z.string().min(1),
  logProb: z.number(),
  args: z.record(z.string(), z.unknown()).optional(),
  version: z.number().int(),
});
export type ActResponse = z.infer<typeof ActResponse>;

export const UpdateRequest = z.object({
  baseVersion: z.number().int().min(0),
  samples: z.array(z.object({ rollout: Rollout, advantage: z.number() })),
  settings: UpdateSettings,
});
export type UpdateRequest = z.infer<typeof UpdateRequest>;

export const UpdateResponse = z.object({
  version: z.number().int(),
  metrics: z.object({ loss: z.number(), clippedFraction: z.number(), kl: z.number(), steps: z.number() }),
});
export type UpdateResponse = z.infer<typeof UpdateResponse>;
