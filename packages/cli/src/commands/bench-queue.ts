import { LocalPolicyEndpoints } from "@harness-s/core/dispatch";
import { queuedRolloutRunner, type SeedInstance } from "@harness-s/core/experiment";
import { rolloutsIn, systemClock, type Environment, type Policy, type RolloutRunner } from "@harness-s/core";
import { startLocalStack } from "@harness-s/functions/local";

async function throughput(run: RolloutRunner, instance: SeedInstance, seconds: number, batch: number) {
  const tasks = instance.train;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  let n = 0;
  while (performance.now() < end) {
    await Promise.all(
      Array.from({ length: batch }, (_, i) => run(tasks[(n + i) % tasks.length]!, instance.evolution.pool.base, n + i)),
    );
    n += batch;
  }
  return n / ((performance.now() - started) / 1000);
}

/**
 * Rollouts/s through the local queues and tables (dispatch queue on fauxqs → 4 dispatch pollers
 * invoking the Lambda handler → DynamoDB Local → read back), next to the same rollouts in process.
 */
export async function benchQueue(
  instance: SeedInstance,
  env: Environment,
  policy: Policy,
  seconds: number,
): Promise<string[]> {
  const batch = 64;
  const inProcess = await throughput(rolloutsIn(env, policy), instance, seconds, batch);
  const policies = new LocalPolicyEndpoints(env);
  policies.register("bench", policy);
  const stack = await startLocalStack({ tasks: { get: async () => undefined }, policies });
  try {
    await stack.stores.pools.put(instance.evolution.pool);
    const queued = queuedRolloutRunner({
      jobId: `bench-${Date.now()}`,
      policyId: "bench",
      poolId: instance.evolution.pool.id,
      dispatch: stack.queues.dispatch.queue,
      rollouts: stack.stores.rollouts,
      clock: systemClock,
    });
    const viaQueues = await throughput(queued, instance, seconds, batch);
    return [
      `rollouts/s via local queues ${viaQueues.toFixed(0).padStart(7)}   (fauxqs → 4 dispatch pollers → DynamoDB Local, batches of ${batch})`,
      `  in-process baseline       ${inProcess.toFixed(0).padStart(7)}   queued/in-process ratio ${(viaQueues / inProcess).toFixed(4)}`,
    ];
  } finally {
    await stack.stop();
  }
}
