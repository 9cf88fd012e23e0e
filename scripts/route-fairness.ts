// POST /v1/route latency for one key while another runs the largest experiment the API allows,
// on seeds the process has not seen, next to the same with no run, in one run; both over real
// HTTP against `harness-s serve` as a user starts it (its own process: DynamoDB Local, fauxqs,
// the workers' thread that trains and rolls out off the API's event loop).
// Run: node --import tsx scripts/route-fairness.ts [seconds per phase, default 30]
import { EXPERIMENT_LIMITS } from "@harness-s/core/experiment";
import { routeLatency, startServe, type LatencyPhase } from "./serve-process.ts";

const seconds = Number(process.argv[2] ?? 30);
const serve = await startServe();
try {
  const runner = await serve.addKey("runner", ["experiments"]);
  const router = await serve.addKey("router", ["route"]);
  const row = (label: string, p: LatencyPhase) =>
    console.log(
      `| ${label} | ${p.requests} | ${p.p50.toFixed(1)} ms | ${p.p99.toFixed(1)} ms | ${p.max.toFixed(0)} ms |`,
    );
  console.log(`serve with its workers on their own thread; ${seconds} s per phase\n`);
  console.log("| phase | requests | p50 | p99 | max |\n|---|---|---|---|---|");
  await routeLatency(serve, router, 2); // warm-up
  const idle = await routeLatency(serve, router, seconds);
  row("no experiment running", idle);
  const seeds = Array.from({ length: EXPERIMENT_LIMITS.seeds }, (_, i) => 9001 + i);
  const { train } = EXPERIMENT_LIMITS;
  const request = {
    seeds,
    arms: ["grpo", "harness-s"],
    train: { steps: train.steps, batchSize: train.batchSize, groupSize: train.groupSize },
    budget: { rollouts: EXPERIMENT_LIMITS.maxBudgetRollouts },
  };
  const queued = await fetch(`${serve.url}/v1/experiments`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${runner}` },
    body: JSON.stringify(request),
  });
  if (queued.status !== 202) throw new Error(`the experiment was not queued: ${queued.status} ${await queued.text()}`);
  const { id } = (await queued.json()) as { id: string };
  const busy = await routeLatency(serve, router, seconds);
  row(
    `another key's experiment (${seeds.length} new seeds, ${request.arms.join(" + ")}, steps ${train.steps}, batch ${train.batchSize}, group ${train.groupSize})`,
    busy,
  );
  const status = (await (
    await fetch(`${serve.url}/v1/experiments/${id}`, { headers: { authorization: `Bearer ${runner}` } })
  ).json()) as {
    status: string;
    progress: { done: number };
  };
  console.log(
    `\nthe run was ${status.status} (${status.progress.done} units done) when measured; p99 busy / idle = ${(busy.p99 / idle.p99).toFixed(2)}`,
  );
  await fetch(`${serve.url}/v1/experiments/${id}/cancel`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${runner}` },
    body: "{}",
  });
} finally {
  await serve.stop();
}
