// The GPU endpoint's settings, apart from its stack so that tests can read them without SST's globals.
import { SERVED_MODELS } from "../infra/settings";

/** What a deploy chooses about the endpoint (defaults: one g5.xlarge, 14 of its 16 GiB for the container). */
export const GPU_ENDPOINT = {
  instanceType: "g5.xlarge",
  containerMemoryMiB: 14_336,
  /** The worker image's port (packages/policy-worker/Dockerfile). */
  port: 8700,
  /** The ECS-optimised Amazon Linux 2 GPU AMI (NVIDIA driver and container toolkit included). */
  amiParameter: "/aws/service/ecs/optimized-ami/amazon-linux-2/gpu/recommended/image_id",
  healthPath: "/healthz",
} as const;

/**
 * The endpoint's network: its two zones (the balancer needs two) and the NAT the private subnets
 * reach out through. SST's "ec2" NAT (a t4g.nano instance a zone, about $6 a month in all) instead
 * of "managed" (a NAT gateway a zone, about $65 a month).
 */
export const POLICY_NETWORK = { zones: ["a", "b"], nat: "ec2" } as const;

/**
 * The model the endpoint's worker serves, from the served models (infra/settings.ts): its folder on
 * the instance is mounted read-only at `/models`, served under its name. One worker
 * process holds one base model and the endpoint runs one worker on its one GPU, so the list must
 * name exactly one model here.
 */
export function endpointModel(models: readonly (typeof SERVED_MODELS)[number][] = SERVED_MODELS) {
  if (models.length !== 1)
    throw new Error(
      `SERVED_MODELS names ${models.length} models; the GPU endpoint runs one worker, one base model (${models.map((m) => m.name).join(", ") || "none"})`,
    );
  return models[0]!;
}
