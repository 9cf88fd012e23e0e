// Where a caller rescue's time goes through the service (issue 54): the bench's stack (as
// `harness-s bench` lays it out), warm rescues (10 unless told), then one rescue of N rollouts at 50 ms a turn
// traced request by request in every thread (the API's and the policy's and environment's servers
// on thread 0, the dispatch workers on theirs, fauxqs on its own), printed relative to the start.
// Run: HTTP_TRACE_FILE=/tmp/trace.tsv node --import tsx --import ./scripts/http-trace-hook.mjs scripts/rescue-trace.ts
// [N, default 8] [warm-up rescues, default 10]
import { readFileSync, writeFileSync } from "node:fs";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startRescueBench } from "../packages/cli/src/commands/bench-rescue-stack.ts";

const file = process.env.HTTP_TRACE_FILE;
if (!file) throw new Error("set HTTP_TRACE_FILE and preload scripts/http-trace-hook.mjs (see the header)");
const inFlight = Number(process.argv[2] ?? 8);
const setup = embeddedSetup(defaultEmbeddedSettings);
const bench = await startRescueBench(await setup.instance(1), setup, [50]);
try {
  const warmUps = Number(process.argv[3] ?? 10);
  for (let i = 0; i < warmUps; i++) await bench.viaService(50, inFlight);
  writeFileSync(file, "");
  const start = performance.timeOrigin + performance.now();
  await bench.viaService(50, inFlight);
  const end = performance.timeOrigin + performance.now();
  const rows = readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => l.split("\t"));
  const at = (ms: string) => (Number(ms) - start).toFixed(1).padStart(7);
  console.log(
    `one rescue of ${inFlight} rollouts at 50 ms a turn: ${(end - start).toFixed(1)} ms; requests (thread, start, end, ms, what), from its POST:`,
  );
  for (const [thread, s, e, method, path, target] of rows.sort((a, b) => Number(a[1]) - Number(b[1]))) {
    if (Number(e) < start) continue; // a long poll that began before
    console.log(
      `${thread}\t${at(s!)}\t${at(e!)}\t${(Number(e) - Number(s)).toFixed(1).padStart(6)}\t${method} ${target ? target.replace(/^(DynamoDB_20120810|AmazonSQS)\./, "") : path}`,
    );
  }
} finally {
  await bench.close();
}
