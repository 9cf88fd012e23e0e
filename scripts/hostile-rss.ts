// The API's memory while its gateway's model endpoint and its panel's LLM voter both stream
// endless bodies: `harness-s serve` as a user starts it (--gateway-upstream, --voters), the two
// hostile endpoints in a process of their own, and a client that keeps asking both for
// `seconds` (default 60). Prints the API process's RSS (VmRSS) before and its peak during.
// Run: node --import tsx scripts/hostile-rss.ts [seconds]
import { fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServe } from "./serve-process.ts";

const seconds = Number(process.argv[2] ?? 60);
const rssMb = (pid: number) => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) / 1024;

// Both hostile endpoints in a child: their own memory is not the API's.
const hostile = fork(new URL("./hostile-endpoints.ts", import.meta.url), [], {
  execArgv: ["--import", "tsx"],
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});
const url = await new Promise<string>((resolve) => hostile.once("message", (m) => resolve(String(m))));
const panel = join(tmpdir(), `hs-hostile-panel-${process.pid}.json`);
writeFileSync(
  panel,
  JSON.stringify({
    voters: [
      { kind: "statistical", id: "failure-tag-evidence" },
      { kind: "llm", id: "endless", baseURL: url, model: "m", timeoutMs: 5_000 },
    ],
    quorum: 1,
  }),
);
const serve = await startServe(["--gateway-upstream", url, "--gateway-pool", "embedded", "--voters", panel]);
try {
  const auth = { "content-type": "application/json", authorization: `Bearer ${serve.adminKey}` };
  const before = rssMb(serve.proc.pid!);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(serve.proc.pid!))), 250);
  const counts = { gateway: new Map<number, number>(), route: new Map<number, number>() };
  const count = (m: Map<number, number>, s: number) => m.set(s, (m.get(s) ?? 0) + 1);
  const end = Date.now() + seconds * 1000;
  const loop = async (kind: "gateway" | "route") => {
    for (let i = 0; Date.now() < end; i++) {
      const res =
        kind === "gateway"
          ? await fetch(`${serve.url}/v1/gateway/chat/completions`, {
              method: "POST",
              headers: auth,
              body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `task ${i}` }] }),
            })
          : await fetch(`${serve.url}/v1/route`, {
              method: "POST",
              headers: auth,
              body: JSON.stringify({
                poolId: "embedded",
                task: { id: `t${i}`, family: "app" },
                failureTags: ["incomplete-results"],
                k: 2,
              }),
            });
      await res.arrayBuffer();
      count(counts[kind], res.status);
    }
  };
  await Promise.all([loop("gateway"), loop("gateway"), loop("route"), loop("route")]);
  clearInterval(sampler);
  const after = rssMb(serve.proc.pid!);
  const show = (m: Map<number, number>) => [...m].map(([s, n]) => `${n} × ${s}`).join(", ");
  console.log(
    `${seconds} s of an endless upstream and an endless voter body: gateway ${show(counts.gateway)}; route ${show(counts.route)}`,
  );
  console.log(
    `API RSS: ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB during, ${after.toFixed(0)} MB after (peak − before ${(peak - before).toFixed(0)} MB)`,
  );
} finally {
  await serve.stop();
  hostile.kill();
}
