import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { z } from "zod";
import { ensureWorkerVenv } from "../policy-worker.ts";

const Level = z.object({
  http: z.number(),
  direct_generate: z.number(),
  http_over_direct: z.number(),
  http_closed_loop: z.number(),
  closed_loop_mean_batch: z.number(),
});
const WorkerBench = z.object({
  model: z.string(),
  device: z.string(),
  max_tokens: z.number(),
  sample_tokens_per_s: z.object({ "1": Level, "8": Level, "32": Level, http_32_over_http_1: z.number() }),
  update_tokens_per_s: z.object({ direct: z.number(), http: z.number(), http_over_direct: z.number() }),
});

/**
 * `bench --worker`: the policy worker's sampling tokens/s over protocol v2 (HTTP) at 1, 8 and 32
 * concurrent episodes next to transformers' batched `generate` on the same model, and its update
 * tokens/s next to a direct loop, in one run (`harness_s_worker.bench`).
 */
export async function benchWorker(
  seconds: number,
  model = "tiny",
  sizes: { maxTokens?: number; updateDatums?: number } = {},
): Promise<string[]> {
  const python = await ensureWorkerVenv();
  const cwd = fileURLToPath(new URL("../../../policy-worker/", import.meta.url));
  const args = ["-m", "harness_s_worker.bench", "--seconds", String(seconds), "--model", model];
  if (sizes.maxTokens) args.push("--max-tokens", String(sizes.maxTokens));
  if (sizes.updateDatums) args.push("--update-datums", String(sizes.updateDatums));
  const { stdout } = await promisify(execFile)(python, args, { cwd, maxBuffer: 1 << 20 });
  const r = WorkerBench.parse(JSON.parse(stdout.trim().split("\n").at(-1)!));
  const s = r.sample_tokens_per_s;
  const level = (n: "1" | "8" | "32") =>
    `worker sample tokens/s, ${n.padStart(2)} episodes  ${s[n].http.toFixed(0).padStart(7)} over HTTP vs ${s[n].direct_generate.toFixed(0)}/s batched generate directly, ratio ${s[n].http_over_direct.toFixed(2)}; closed-loop ${s[n].http_closed_loop.toFixed(0)}/s (mean batch ${s[n].closed_loop_mean_batch})`;
  const u = r.update_tokens_per_s;
  return [
    `worker (${r.model} on ${r.device}, ${r.max_tokens}-token turns)`,
    level("1"),
    level("8"),
    level("32"),
    `worker sample tokens/s at 32 episodes over 1: ${s.http_32_over_http_1.toFixed(2)}×`,
    `worker update tokens/s  ${u.http.toFixed(0).padStart(8)} over HTTP vs ${u.direct.toFixed(0)}/s driven directly, ratio ${u.http_over_direct.toFixed(2)}`,
  ];
}
