import { z } from "zod";
import { BUNDLED_DATA_DIR } from "@harness-s/dbbench";
import { declareCommand, flag } from "../declare.ts";
import { EvalOptions, VerifyOptions } from "../commands/dbbench-options.ts";
import { DBBENCH_DIR_VARIABLE, timestamped } from "./shared.ts";

const dataDir = (given: string | undefined) => given ?? process.env[DBBENCH_DIR_VARIABLE] ?? BUNDLED_DATA_DIR;

export const dbbenchVerify = declareCommand({
  name: "dbbench verify",
  summary: "Replay the gold of every row through the environment and evaluator; print matched / total per type",
  flags: z.strictObject({
    engine: flag(VerifyOptions.shape.engine, "<e>", "SQL engine"),
    split: flag(VerifyOptions.shape.split, "<s>", "data split"),
    json: flag(VerifyOptions.shape.json, null, "print one JSON object"),
    concurrency: flag(VerifyOptions.shape.concurrency, "<n>", "rollouts at a time"),
    data: flag(
      z.string().min(1).optional(),
      "<dir>",
      `folder with standard.jsonl and dev.jsonl (default $${DBBENCH_DIR_VARIABLE} or the bundled copy)`,
    ),
    mysqlUrl: flag(VerifyOptions.shape.mysqlUrl, "<url>", "MySQL/MariaDB server"),
  }),
  run: async (o) => (await import("../commands/dbbench.ts")).dbbenchVerifyCommand({ ...o, data: dataDir(o.data) }),
});

export const dbbenchEval = declareCommand({
  name: "dbbench eval",
  summary:
    "Evaluate an OpenAI-compatible agent (vLLM, a hosted API) on a split under one harness; write summary.json and report.md",
  flags: z.strictObject({
    baseUrl: flag(EvalOptions.shape.baseUrl, "<url>", "the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"),
    model: flag(EvalOptions.shape.model, "<m>", "model name"),
    apiKey: flag(z.string().min(1).optional(), "<k>", "API key (default $OPENAI_API_KEY, else none)"),
    harness: flag(EvalOptions.shape.harness, "<id>", "dbbench-h0 or a sibling id (dbbench-schema-preview, …)"),
    split: flag(EvalOptions.shape.split, "<s>", "data split"),
    engine: flag(EvalOptions.shape.engine, "<e>", "SQL engine"),
    concurrency: flag(EvalOptions.shape.concurrency, "<n>", "rollouts at a time"),
    limit: flag(EvalOptions.shape.limit, "<n>", "only the first n rows"),
    out: flag(z.string().min(1).optional(), "<dir>", "output folder (default results/dbbench-<timestamp>)"),
    systemFile: flag(EvalOptions.shape.systemFile, "<file>", "replace the system prompt"),
    temperature: flag(EvalOptions.shape.temperature, "<t>", "sampling temperature"),
    timeoutSeconds: flag(EvalOptions.shape.timeoutSeconds, "<s>", "per model request"),
    logprobs: flag(EvalOptions.shape.logprobs, null, "do not ask the server for token log-probabilities", {
      negate: true,
    }),
    data: flag(
      z.string().min(1).optional(),
      "<dir>",
      `folder with the splits (default $${DBBENCH_DIR_VARIABLE} or the bundled copy)`,
    ),
    mysqlUrl: flag(EvalOptions.shape.mysqlUrl, "<url>", "MySQL/MariaDB server"),
  }),
  run: async (o) => {
    const { rows, erroredRows } = await (await import("../commands/dbbench.ts")).dbbenchEvalCommand({
      ...o,
      apiKey: o.apiKey ?? process.env.OPENAI_API_KEY,
      data: dataDir(o.data),
      out: o.out ?? timestamped("results/dbbench-"),
    });
    if (erroredRows > 0) {
      process.stderr.write(
        `error: ${erroredRows} of ${rows} rows errored at the model endpoint (${o.baseUrl}); their rows count as failures in the summary\n`,
      );
      process.exit(1);
    }
  },
});
