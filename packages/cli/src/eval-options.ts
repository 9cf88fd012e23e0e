import { z } from "zod";
import { ChatTemperature } from "@harness-s/core/gateway";
import { familyFlags } from "@harness-s/envs";
import { flag } from "./declare.ts";
import { envFlag, familySummaries } from "./families.ts";
import { int, num, url } from "./flags.ts";

/**
 * `eval`'s options: an OpenAI-compatible agent on a family's tasks under one harness (the flags; a caller gives the
 * same).
 */
export const EnvEvalOptions = z.strictObject({
  env: envFlag("eval", `the environment: ${familySummaries("eval")}`),
  baseUrl: flag(url, "<url>", "the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"),
  model: flag(z.string().min(1), "<m>", "model name"),
  apiKey: flag(z.string().min(1).optional(), "<k>", "API key (default $OPENAI_API_KEY, else none)"),
  harness: flag(
    z.string().min(1).optional(),
    "<id>",
    "a harness of the environment's pool (default its H0, e.g. appworld-h0 or swe-h0)",
  ),
  split: flag(z.enum(["train", "dev", "heldout", "all"]).default("all"), "<s>", "which tasks"),
  /** At least 3: the scores are Pass@3 and Avg@3. */
  attempts: flag(int(3, 16).default(3), "<n>", "attempts per task"),
  limit: flag(int(1).optional(), "<n>", "only the first n tasks"),
  out: flag(z.string().min(1).optional(), "<dir>", "output folder (default results/eval-<env>-<timestamp>)"),
  /** 1: the attempts of a Pass@3 differ. */
  temperature: flag(num(() => ChatTemperature).default(1), "<t>", "sampling temperature"),
  timeoutSeconds: flag(num((n) => n.positive()).default(120), "<s>", "per model request"),
  ...familyFlags("eval"),
});
/** The options as given; a family's own flags (`appworldServers`, …) beside them. */
export type EnvEvalOptions = z.input<typeof EnvEvalOptions> & Readonly<Record<string, unknown>>;
