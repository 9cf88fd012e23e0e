import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { z } from "zod";
import { ensureWorkerVenv } from "../policy-worker.ts";

const Rates = z.object({ direct: z.number(), http: z.number(), http_over_direct: z.number() });
const WorkerBench = z.object({ model: z.string(), device: z.string(), sample_tokens_per_s: Rates, update_tokens_per_s: Rates });

/**
 * `bench --worker`: the policy worker's sampling and update tokens/s over protocol v2 (HTTP) next
 * to the same model driven directly in Python, in one run (`harness_s_worker.bench`).
 */
export async function benchWorker(seconds: number, model = "tiny"): Promise<string[]> {
  const python = await ensureWorkerVenv();
  const cwd = fileURLToPath(new URL("../../../policy-worker/", import.meta.url));
  const { stdout } = await promisify(execFile)(python, ["-m", "harness_s_worker.bench", "--seconds", String(seconds), "--model", model], { cwd, maxBuffer: 1 << 20 });
  const r = WorkerBench.parse(JSON.parse(stdout.trim().split("\n").at(-1)!));
  const line = (what: string, x: z.infer<typeof Rates>) =>
    `worker ${what} tokens/s  ${x.http.toFixed(0).padStart(8)}   over HTTP (protocol v2) vs ${x.direct.toFixed(0)}/s driven directly in Python, ratio ${x.http_over_direct.toFixed(2)} (${r.model} on ${r.device})`;
  return [line("sample", r.sample_tokens_per_s), line("update", r.update_tokens_per_s)];
}
