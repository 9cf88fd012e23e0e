import { z } from "zod";
import { ChatTemperature } from "@harness-s/core/gateway";
import { Split, dbbenchHarnesses } from "@harness-s/dbbench";
import { int, num, url } from "../flags.ts";

// The dbbench commands' options, apart from the commands themselves so that parsing flags (and
// printing help) does not load the SQL engines and the OpenAI client.

/** The SQL engine options of the dbbench commands, as the command line gives them (strings) or a caller does. */
export const EngineOptions = z.object({
  engine: z.enum(["mysql", "sqlite"]).default("mysql"),
  split: Split.default("dev"),
  data: z.string().min(1),
  mysqlUrl: url.default("mysql://root@127.0.0.1:3306"),
  concurrency: int(1, 64).default(4),
});
export type EngineOptions = z.infer<typeof EngineOptions>;

export const VerifyOptions = EngineOptions.extend({
  split: Split.default("standard"),
  json: z.boolean().default(false),
  concurrency: int(1, 64).default(8),
});

const harnessIds = dbbenchHarnesses.map((h) => h.id) as [string, ...string[]];

export const EvalOptions = EngineOptions.extend({
  baseUrl: url,
  model: z.string().min(1),
  apiKey: z.string().default("not-needed"),
  harness: z
    .enum(harnessIds, {
      error: (i) => `no DBBench harness ${JSON.stringify(i.input)} (one of ${harnessIds.join(", ")})`,
    })
    .default("dbbench-h0"),
  limit: int(1).optional(),
  out: z.string().min(1),
  systemFile: z.string().optional(),
  /** 0: greedy, as AgentBench evaluates DBBench. */
  temperature: num(() => ChatTemperature).default(0),
  timeoutSeconds: num((n) => n.positive()).default(120),
  logprobs: z.boolean().default(true),
});
