/**
 * How long `harness-s serve` takes to listen, as the docs state it: `runs` fresh starts one after another (DynamoDB
 * Local, fauxqs, the tiny model's policy worker, the API), each stopped with SIGINT before the next. Started as
 * `npm run harness-s` starts it (the CLI's build, packages/cli/bin/harness-s.js); each line also gives the CPU
 * seconds serve's own process had used when it listened (its threads' included; its children's not).
 *
 *   node --import tsx scripts/serve-start.ts [runs=3]
 */
import { spawn } from "node:child_process";
import { processCpuSeconds } from "../packages/cli/src/commands/cpu-split.ts";

const runs = Number(process.argv[2] ?? 3);
for (let i = 1; i <= runs; i++) {
  const started = performance.now();
  const proc = spawn(
    "node",
    ["packages/cli/bin/harness-s.js", "serve", "--port", "0", "--api-key", "serve-start-admin-key"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const read = (c: Buffer) => {
      out += c.toString();
      if (out.includes("listening on")) resolve();
    };
    proc.stdout.on("data", read);
    proc.stderr.on("data", (c: Buffer) => (out += c.toString()));
    proc.once("exit", (code) => reject(new Error(`serve exited with ${code} before it listened:\n${out}`)));
  });
  const used = proc.pid ? processCpuSeconds(proc.pid) : undefined;
  const cpu = used === undefined ? "" : `, ${used.toFixed(1)} CPU s in serve's process`;
  console.log(`serve ${i}: listening after ${((performance.now() - started) / 1000).toFixed(1)} s${cpu}`);
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGINT");
  await exited;
}
