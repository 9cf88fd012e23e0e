import { z } from "zod";
import type { Command } from "commander";
import { int, num, url } from "./flags.ts";
import type { RemoteEnvOptions } from "./remote-envs-setup.ts";

/** Where AppWorld and SWE-Gym run (`experiment` and `env-serve` take the same flags). */
export const remoteEnvFlags = {
  /** Comma-separated on the command line; a list as parsed (parsing twice gives the same). */
  appworldUrls: z
    .union([z.array(z.string()), z.string().transform((v) => v.split(",").map((s) => s.trim()))])
    .pipe(z.array(z.string().url()).min(1).max(256))
    .optional(),
  appworldTasks: z.string().min(1).optional(),
  appworldServers: int(1, 64),
  sweInstances: z.string().min(1).optional(),
  sweDeployments: url.optional(),
  sweTestsBlocked: z.boolean().optional(),
};
const RemoteEnvFlags = z.object(remoteEnvFlags);
type RemoteEnvFlags = z.infer<typeof RemoteEnvFlags>;

/** The commander options of {@link remoteEnvFlags}; `servers` is how many local AppWorld servers start by default. */
export function withRemoteEnvOptions(command: Command, servers: number): Command {
  return command
    .option(
      "--appworld-urls <list>",
      "with --env appworld: AppWorld environment servers (`appworld serve environment`, one live task each), comma-separated; default local fixture servers",
    )
    .option("--appworld-tasks <file>", "with --env appworld: task ids per slot (JSON {train, dev, heldout, tags}); default the fixture tasks")
    .option("--appworld-servers <n>", "with --env appworld and no --appworld-urls: local fixture servers to start", String(servers))
    .option("--swe-instances <file>", "with --env swe-gym: SWE-bench-format instances (JSON lines); default the fixture repositories")
    .option("--swe-deployments <url>", "with --env swe-gym: a deployment service starting one SWE-ReX runtime per instance; default the local fixture server")
    .option("--swe-tests-blocked", "with --env swe-gym: refuse commands that run a test suite (the setting of the assertion-fallback behaviour)");
}

/** AppWorld's or SWE-Gym's options from the flags; undefined for any other environment. */
export function remoteEnvOf(env: string, o: RemoteEnvFlags): RemoteEnvOptions | undefined {
  if (env === "appworld") return { kind: "appworld", urls: o.appworldUrls, tasks: o.appworldTasks, servers: o.appworldServers };
  if (env === "swe-gym") return { kind: "swe-gym", instances: o.sweInstances, deployments: o.sweDeployments, testsBlocked: o.sweTestsBlocked ?? false };
  return undefined;
}

/** `eval`'s options: an OpenAI-compatible agent on AppWorld or SWE-Gym under one harness. */
export const EnvEvalOptions = z.strictObject({
  env: z.enum(["appworld", "swe-gym"]),
  baseUrl: url,
  model: z.string().min(1),
  apiKey: z.string().default("not-needed"),
  /** A harness of the environment's pool (default its H0). */
  harness: z.string().min(1).optional(),
  split: z.enum(["train", "dev", "heldout", "all"]).default("all"),
  /** At least 3: the scores are Pass@3 and Avg@3. */
  attempts: int(3, 16).default(3),
  limit: int(1).optional(),
  out: z.string().min(1),
  temperature: num((n) => n.min(0).max(2)).default(1),
  timeoutSeconds: num((n) => n.positive()).default(120),
  ...remoteEnvFlags,
  appworldServers: remoteEnvFlags.appworldServers.default(2),
});
export type EnvEvalOptions = z.input<typeof EnvEvalOptions>;

/** `eval`'s flags: the output folder and key have defaults the command line fills in. */
export const EnvEvalFlags = EnvEvalOptions.extend({ out: z.string().min(1).optional(), apiKey: z.string().min(1).optional() });
