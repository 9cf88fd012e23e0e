/**
 * How long `harness-s serve` takes to listen, as the docs state it: `runs` fresh starts one after another (DynamoDB
 * Local, fauxqs, the tiny model's policy worker, the API), each stopped with SIGINT before the next.
 *
 *   node --import tsx scripts/serve-start.ts [runs=3]
 */
import { spawn } from "node:child_process";

const runs = Number(process.argv[2] ?? 3);
for (let i = 1; i <= runs; i++) {
  const started = performance.now();
  const proc = spawn(
    "node",
    ["--import", "tsx", "packages/cli/src/main.ts", "serve", "--port", "0", "--api-key", "serve-start-admin-key"],
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
  console.log(`serve ${i}: listening after ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGINT");
  await exited;
}
