import { NotConfiguredError } from "@harness-s/core";
import { singlePolicyEndpoint } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import { startLocalStack, type LocalStackOptions } from "@harness-s/functions/local";
import { seedPool } from "./api-factory.ts";

/**
 * The local stack as callers' rescues use it (their own policy and environment on loopback, none
 * of the service's own), with `instance`'s evolved pool and its profiles.
 */
export async function startCallerRescueStack(
  dynamoEndpoint: string,
  instance: SeedInstance,
  over: Partial<LocalStackOptions> = {},
) {
  const stack = await startLocalStack({
    dynamoEndpoint,
    tasks: { get: async () => undefined },
    policies: singlePolicyEndpoint(() => Promise.reject(new NotConfiguredError("no own policy in this test"))),
    allowLoopbackEndpoints: true,
    ...over,
  });
  await seedPool(stack.deps, instance.evolution.pool, instance.evolution.initialProfiles);
  return stack;
}
