import { z } from "zod";
import { ChatTemperature } from "@harness-s/core/gateway";
import { flag } from "./declare.ts";
import { int, num, url } from "./flags.ts";
import type { RemoteEnvOptions } from "./remote-envs-setup.ts";

/** Where AppWorld and SWE-Gym run (`experiment`, `eval` and `env-serve` take the same flags); `servers`: local AppWorld servers started by default. */
export const remoteEnvFlags = (servers: number) => ({
  /** Comma-separated on the command line; a list as parsed (parsing twice gives the same). */
  appworldUrls: flag(
    z
      .union([z.array(z.string()), z.string().transform((v) => v.split(",").map((s) => s.trim()))])
      .pipe(z.array(z.string().url()).min(1).max(256))
      .optional(),
    "<list>",
    "with --env appworld: AppWorld environment servers (`appworld serve environment`, one live task each), comma-separated; default local fixture servers",
  ),
  appworldTasks: flag(z.string().min(1).optional(), "<file>", "with --env appworld: task ids per slot (JSON {train, dev, heldout, tags}); default the fixture tasks"),
  appworldServers: flag(int(1, 64).default(servers), "<n>", "with --env appworld and no --appworld-urls: local fixture servers to start"),
  sweInstances: flag(z.string().min(1).optional(), "<file>", "with --env swe-gym: SWE-bench-format instances (JSON lines); default the fixture repositories"),
  sweDeployments: flag(url.optional(), "<url>", "with --env swe-gym: a deployment service starting one SWE-ReX runtime per instance; default the local fixture server"),
  sweTestsBlocked: flag(z.boolean().optional(), null, "with --env swe-gym: refuse commands that run a test suite (the setting of the assertion-fallback behaviour)"),
});
const RemoteEnvFlags = z.object(remoteEnvFlags(1));
type RemoteEnvFlags = z.infer<typeof RemoteEnvFlags>;

/** AppWorld's or SWE-Gym's options from the flags; undefined for any other environment. */
export function remoteEnvOf(env: string, o: RemoteEnvFlags): RemoteEnvOptions | undefined {
  if (env === "appworld") return { kind: "appworld", urls: o.appworldUrls, tasks: o.appworldTasks, servers: o.appworldServers };
  if (env === "swe-gym") return { kind: "swe-gym", instances: o.sweInstances, deployments: o.sweDeployments, testsBlocked: o.sweTestsBlocked ?? false };
  return undefined;
}

/** `eval`'s options: an OpenAI-compatible agent on AppWorld or SWE-Gym under one harness (the flags; a caller gives the same). */
export const EnvEvalOptions = z.strictObject({
  env: flag(z.enum(["appworld", "swe-gym"]), "<env>", "the environment (at local fixture servers unless their URLs are given)"),
  baseUrl: flag(url, "<url>", "the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"),
  model: flag(z.string().min(1), "<m>", "model name"),
  apiKey: flag(z.string().min(1).optional(), "<k>", "API key (default $OPENAI_API_KEY, else none)"),
  harness: flag(z.string().min(1).optional(), "<id>", "a harness of the environment's pool (default its H0, e.g. appworld-h0 or swe-h0)"),
  split: flag(z.enum(["train", "dev", "heldout", "all"]).default("all"), "<s>", "which tasks"),
  /** At least 3: the scores are Pass@3 and Avg@3. */
  attempts: flag(int(3, 16).default(3), "<n>", "attempts per task"),
  limit: flag(int(1).optional(), "<n>", "only the first n tasks"),
  out: flag(z.string().min(1).optional(), "<dir>", "output folder (default results/eval-<env>-<timestamp>)"),
  /** 1: the attempts of a Pass@3 differ. */
  temperature: flag(num(() => ChatTemperature).default(1), "<t>", "sampling temperature"),
  timeoutSeconds: flag(num((n) => n.positive()).default(120), "<s>", "per model request"),
  ...remoteEnvFlags(2),
});
export type EnvEvalOptions = z.input<typeof EnvEvalOptions>;
