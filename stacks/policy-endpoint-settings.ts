// The GPU endpoint's settings, apart from its stack so that tests can read them without SST's globals.

/** What a deploy chooses about the endpoint (defaults: one g5.xlarge, 14 of its 16 GiB for the container). */
export const GPU_ENDPOINT = {
  instanceType: "g5.xlarge",
  containerMemoryMiB: 14_336,
  /** The worker image's port (packages/policy-worker/Dockerfile). */
  port: 8700,
  /** The model folder on the instance, mounted read-only into the container. */
  modelDir: "/opt/harness-s/models/current",
  /** The ECS-optimised Amazon Linux 2 GPU AMI (NVIDIA driver and container toolkit included). */
  amiParameter: "/aws/service/ecs/optimized-ami/amazon-linux-2/gpu/recommended/image_id",
  healthPath: "/healthz",
} as const;
