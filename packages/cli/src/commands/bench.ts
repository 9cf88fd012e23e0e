import { createRng, rolloutsIn, type Policy, type Task } from "@harness-s/core";
import { percentile } from "@harness-s/core/metrics";
import { route, routerOptions, statisticalVoters, failureTagVoter } from "@harness-s/core/voting";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { benchApi } from "./bench-api.ts";
import { benchMetering } from "./bench-metering.ts";
import { benchQueue } from "./bench-queue.ts";
import { benchRescue } from "./bench-rescue.ts";
import { benchWorker } from "./bench-worker.ts";
import { benchDispatchProcesses, formatProcessesRows } from "./bench-dispatch.ts";
import { benchRoundTrips, formatRoundTrips } from "./bench-round-trips.ts";

/** A policy that picks uniformly: the baseline for the embedded policy's cost per step. */
const uniformPolicy: Policy = {
  version: () => 0,
  act: async (obs, rng) => ({ action: obs.tools[rng.int(obs.tools.length)]!, logProb: -Math.log(obs.tools.length) }),
  update: async () => ({ version: 0, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } }),
};

async function timeRollouts(tasks: readonly Task[], run: (t: Task, seed: number) => Promise<unknown>, seconds: number) {
  const end = performance.now() + seconds * 1000;
  let n = 0;
  while (performance.now() < end) {
    for (const t of tasks) await run(t, n++);
  }
  return n / seconds;
}

/**
 * Measures, in one run: rollouts/s (embedded policy vs uniform baseline), router decisions/s with
 * latency percentiles (vote vs single voter), the router API over HTTP vs a bare Hono endpoint,
 * rollouts/s through the local queues and tables vs in process, and caller-rescue rollouts/s at
 * 1, 8 and 32 in flight through the service vs in process, for a policy that answers at once and
 * one that takes 50 ms a turn, with the CPU each process spent (`bench-rescue.ts`).
 */
export async function benchCommand(opts: { seconds: number; worker?: boolean }): Promise<void> {
  const deps = embeddedSetup(defaultEmbeddedSettings);
  const instance = await deps.instance(1);
  const { train, evolution } = instance;
  const policy = deps.createPolicy(0);
  const tasks = train.slice(0, 60);
  const base = evolution.pool.base;
  const rps = await timeRollouts(tasks, (t, s) => rolloutsIn(deps.env, policy)(t, base, s), opts.seconds);
  const rpsUniform = await timeRollouts(tasks, (t, s) => rolloutsIn(deps.env, uniformPolicy)(t, base, s), opts.seconds);
  console.log(
    `embedded rollouts/s        ${rps.toFixed(0).padStart(8)}   (uniform-policy baseline ${rpsUniform.toFixed(0)}/s, ratio ${(rps / rpsUniform).toFixed(2)})`,
  );

  const decide = async (voters: typeof statisticalVoters) => {
    const lat: number[] = [];
    const rng = createRng(1);
    const end = performance.now() + opts.seconds * 1000;
    let i = 0;
    while (performance.now() < end) {
      const t = tasks[i % tasks.length]!;
      const t0 = performance.now();
      await route(
        {
          decisionId: `b${i}`,
          task: t,
          failureTags: ["incomplete-results"],
          failedEvents: ["page:more", "submit:rejected"],
          candidates: evolution.pool.siblings,
          profiles: evolution.initialProfiles,
          poolVersion: evolution.pool.version,
        },
        routerOptions({ k: 2 }),
        { voters, rng },
      );
      lat.push(performance.now() - t0);
      i++;
    }
    return { perSecond: i / opts.seconds, p50: percentile(lat, 50), p99: percentile(lat, 99) };
  };
  const vote = await decide(statisticalVoters);
  const single = await decide([failureTagVoter]);
  console.log(
    `router decisions/s         ${vote.perSecond.toFixed(0).padStart(8)}   p50 ${(vote.p50 * 1000).toFixed(0)} µs, p99 ${(vote.p99 * 1000).toFixed(0)} µs (${statisticalVoters.length} statistical voters)`,
  );
  console.log(
    `  single-voter baseline    ${single.perSecond.toFixed(0).padStart(8)}   p50 ${(single.p50 * 1000).toFixed(0)} µs, p99 ${(single.p99 * 1000).toFixed(0)} µs; vote/single throughput ratio ${(vote.perSecond / single.perSecond).toFixed(2)}`,
  );
  for (const line of await benchApi(instance, opts.seconds)) console.log(line);
  for (const line of await benchMetering(instance, deps.env, opts.seconds)) console.log(line);
  for (const line of await benchQueue(instance, deps.env, policy, opts.seconds)) console.log(line);
  for (const line of await benchRescue(instance, deps, opts.seconds)) console.log(line);
  if (opts.worker) for (const line of await benchWorker(opts.seconds)) console.log(line);
  await benchDispatchCommand();
}

/**
 * The dispatch benches (`bench --dispatch` runs only these): a key's rollouts through 1, 2 and 4 dispatch processes,
 * then a rescue's store and queue requests in sequence.
 */
export async function benchDispatchCommand(): Promise<void> {
  const deps = embeddedSetup(defaultEmbeddedSettings);
  const instance = await deps.instance(1);
  for (const line of formatProcessesRows(await benchDispatchProcesses(instance, deps))) console.log(line);
  for (const line of formatRoundTrips(await benchRoundTrips(instance, deps))) console.log(line);
}
