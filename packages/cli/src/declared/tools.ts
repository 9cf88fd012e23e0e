import { existsSync } from "node:fs";
import { z } from "zod";
import { declareCommand, flag } from "../declare.ts";
import { int, num, port, UsageError } from "../flags.ts";
import { EnvEvalOptions } from "../eval-options.ts";
import { FamilyName, familyFor, familyNames } from "../families.ts";

export const envEval = declareCommand({
  name: "eval",
  summary: `Evaluate an OpenAI-compatible agent on ${familyNames("eval").join(" or ")} under one harness (Pass@3, Avg@3, behaviours); write summary.json and report.md`,
  flags: EnvEvalOptions,
  run: async (o) => {
    const { attempts, errored } = await (await import("../commands/env-eval.ts")).envEvalCommand({
      ...o,
      apiKey: o.apiKey ?? process.env.OPENAI_API_KEY,
    });
    if (errored > 0) {
      process.stderr.write(
        `error: ${errored} of ${attempts} attempts errored at the model endpoint (${o.baseUrl}); they count as failures in the summary\n`,
      );
      process.exit(1);
    }
  },
});

/** The suite the service's own figures (`bench` without a family's benchmark) run on. */
const SERVICE_SUITE = "embedded";
const BenchEnv = z.union([z.literal(SERVICE_SUITE), FamilyName("bench")]);

export const bench = declareCommand({
  name: "bench",
  summary:
    "Measure embedded rollouts/s and router decisions/s with latency percentiles, against baselines in the same run",
  flags: z.strictObject({
    seconds: flag(num((n) => n.positive()).default(2), "<s>", "measuring time per figure"),
    worker: flag(
      z.boolean().default(false),
      null,
      "also the policy worker's sampling and update tokens/s over protocol v2 vs direct (creates its venv if missing)",
    ),
    env: flag(
      BenchEnv.default(SERVICE_SUITE),
      "<env>",
      `${SERVICE_SUITE} (the suite, the router, the API, the queues), or a family's own environment benchmark: ${familyNames("bench").join(", ")} (e.g. DBBench's cost per rollout on SQLite and MariaDB)`,
      { choices: [SERVICE_SUITE, ...familyNames("bench")] },
    ),
    dispatch: flag(
      z.boolean().default(false),
      null,
      "only the dispatch benches: a key's 64 rollouts through 1, 2 and 4 dispatch processes (leases, conflicts, rollouts per CPU second), and a rescue's store and queue requests in sequence",
    ),
    mysqlUrl: flag(
      z.url().default("mysql://root@127.0.0.1:3306"),
      "<url>",
      "with --env dbbench: the MariaDB/MySQL server",
    ),
  }),
  run: async (o) => {
    const own = o.env === SERVICE_SUITE ? undefined : familyFor(o.env, "bench").bench;
    if (own) for (const line of await own(o)) console.log(line);
    else if (o.dispatch) await (await import("../commands/bench.ts")).benchDispatchCommand();
    else await (await import("../commands/bench.ts")).benchCommand({ seconds: o.seconds, worker: o.worker });
  },
});

export const policyWorker = declareCommand({
  name: "policy-worker",
  summary:
    "Start the reference policy worker (protocol v2: Python, torch, transformers, peft); creates its venv first if it is missing",
  flags: z.strictObject({
    model: flag(
      z.string().min(1).default("tiny"),
      "<path>",
      "a Hugging Face model directory, or tiny (a tiny model built offline, for tests)",
    ),
    port: flag(port.default(8765), "<n>", "port to listen on"),
    host: flag(z.string().min(1).default("127.0.0.1"), "<h>", "address to bind (loopback unless told otherwise)"),
    token: flag(z.string().min(1).optional(), "<t>", "bearer token every request but /healthz must carry"),
    stateDir: flag(
      z.string().min(1).optional(),
      "<dir>",
      "where adapters and checkpoints live (default: a fresh temp folder); a restarted worker on the same folder restores them",
    ),
    device: flag(
      z
        .string()
        .regex(/^(cpu|cuda(:\d+)?)$/, "cpu, cuda or cuda:<n>")
        .optional(),
      "<d>",
      "cpu or cuda[:n] (default: cuda when torch sees one)",
    ),
    maxPolicies: flag(int(1, 100_000).optional(), "<n>", "policies held at once (429 past it)"),
    maxEpisodes: flag(int(1, 10_000_000).optional(), "<n>", "open episodes per policy (429 past it)"),
    maxBodyMb: flag(int(1, 4096).optional(), "<n>", "largest request body (413 past it)"),
    kvCacheMb: flag(
      int(0, 1 << 20).optional(),
      "<n>",
      "memory for the open episodes' KV caches (least recently used evicted first)",
    ),
    sampleTimeoutS: flag(num((n) => n.positive()).optional(), "<s>", "longest a sample may wait and run (503 past it)"),
    toolParser: flag(
      z.enum(["hermes", "llama3_json", "mistral"]).optional(),
      "<p>",
      "the tool-call format the model writes (default: read from its chat template)",
    ),
  }),
  run: async ({ model, port, host, token, stateDir, ...tuning }) => {
    if (model !== "tiny" && !existsSync(model))
      throw new UsageError(`--model ${model}: no such folder (a Hugging Face model directory, or tiny)`);
    const worker = await (await import("../policy-worker.ts")).startPolicyWorker(
      { model, port, host, token, stateDir, tuning },
      (line) => console.error(line),
    );
    console.log(`harness-s policy worker (protocol v2, model ${model}) ready on ${worker.url}; Ctrl-C stops it`);
    const stop = async () => {
      await worker.stop();
      process.exit(0);
    };
    process.once("SIGINT", () => void stop());
    process.once("SIGTERM", () => void stop());
    worker.process.once("exit", (code) => process.exit(code ?? 1));
  },
});
