import { z } from "zod";
import { EndpointCidrs, MAX_ENDPOINT_CIDRS } from "@harness-s/core/outbound";
import { Name } from "@harness-s/core";
import { OPENENV_SERVER_DEFAULTS } from "@harness-s/adapters/openenv/server-limits";
import { familyFlags } from "@harness-s/envs";
import { GatewayEnv, gatewayEnvs } from "@harness-s/functions/gateway-config";
import { flag } from "../declare.ts";
import { envFlag, familyFor, familyNames, familySummaries } from "../families.ts";
import { int, num, port } from "../flags.ts";

// The serving commands' flags, apart from their declarations: the commands import them too.

/** The most dispatch processes `serve --dispatch-processes` starts (each about 100 MB of memory). */
export const MAX_DISPATCH_PROCESSES = 16;

/** The suite whose evolved pool `serve` registers (with its profiles) and whose tasks its workers run. */
export const SERVED_SUITE = "embedded";

/**
 * The pools `serve` registers at start: the suite's, and each family's that declares one (more can
 * be added over the API; the gateway routes between one of these).
 */
export const servedPools = (): string[] => [SERVED_SUITE, ...familyNames().filter((n) => familyFor(n).servePool)];
const ServedPool = z.string().superRefine((id, ctx) => {
  if (!servedPools().includes(id))
    ctx.addIssue({ code: "custom", message: `one of the pools serve registers: ${servedPools().join(", ")}` });
});

/** `name=DIR,…` as its parts (a part without `=` has no folder: the schema says so). */
const modelFolderParts = (text: string) =>
  text
    .split(",")
    .filter((part) => part.trim() !== "")
    .map((part) => {
      const at = part.indexOf("=");
      return at < 0
        ? { name: part.trim(), dir: "" }
        : { name: part.slice(0, at).trim(), dir: part.slice(at + 1).trim() };
    });

/**
 * `--models name=DIR,…`: the base models serve runs, each from its Hugging Face folder (or `tiny`,
 * the worker's test model), each name once; the command line's text, or the parsed list again.
 */
export const ModelFolders = z.preprocess(
  (given) => (typeof given === "string" ? modelFolderParts(given) : given),
  z
    .array(z.object({ name: Name, dir: z.string().min(1, "name=DIR: a model folder after its name") }))
    .min(1, "name=DIR, one or more, comma-separated")
    .refine((models) => new Set(models.map((m) => m.name)).size === models.length, "each model name once"),
);

/** What `serve` offers when `--models` is not given: the worker's tiny test model, which any machine here can run. */
export const DEFAULT_SERVED_MODELS = [{ name: "tiny", dir: "tiny" }] as const;

/** `--models none`: no base model (experiments then run on each environment's own policy only). */
export const ServedModelsFlag = z.union([
  z.literal("none").transform(() => [] as { name: string; dir: string }[]),
  // As parsed once already (the command parses the options it is handed again): none.
  z
    .array(z.unknown())
    .length(0)
    .transform(() => [] as { name: string; dir: string }[]),
  ModelFolders,
]);

/** `serve`'s options, as the command line gives them (strings) or a caller does (numbers). */
export const ServeOptions = z.strictObject({
  port: flag(port.default(18787), "<n>", "port to listen on (0 picks a free one)"),
  host: flag(z.string().min(1).default("127.0.0.1"), "<h>", "address to bind"),
  apiKey: flag(
    z.string().min(8, "an API key needs at least 8 characters").optional(),
    "<key>",
    "the admin API key to accept (default: a random one, printed)",
  ),
  /** LLM voters' keys come from the environment variables the panel names. */
  voters: flag(
    z.string().min(1).optional(),
    "<file>",
    "a voter panel (JSON: statistical and OpenAI-compatible LLM voters, weights, quorum); default the statistical voters",
  ),
  gatewayUpstream: flag(
    z
      .url({
        protocol: /^https?$/,
        error: "an http:// or https:// URL (an OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1)",
      })
      .optional(),
    "<url>",
    "serve the Rank-1 harness gateway at /v1/gateway/chat/completions in front of this OpenAI-compatible model endpoint (key: HARNESS_S_GATEWAY_UPSTREAM_KEY)",
  ),
  gatewayModel: flag(z.string().min(1).optional(), "<name>", "the model name sent upstream (default: the agent's)"),
  gatewayPool: flag(ServedPool.default(SERVED_SUITE), "<id>", "the pool the gateway routes between", {
    choices: servedPools(),
  }),
  gatewayEnv: flag(
    GatewayEnv.default("generic"),
    "<env>",
    `how the gateway reads tool outputs: generic (an output starting with "error" failed), or a family's reading: ${familyNames("gateway").join(", ")}`,
    { choices: gatewayEnvs() },
  ),
  models: flag(
    ServedModelsFlag.optional(),
    "<name=dir,…|none>",
    "base models experiments may train LoRA adapters on, each from its folder (one policy worker each, stopped with serve; GET /v1/models lists them); default tiny=tiny, the worker's test model (its venv made the first time, about a minute); none: no model",
  ),
  dispatchProcesses: flag(
    int(1, MAX_DISPATCH_PROCESSES).default(1),
    "<n>",
    `run the dispatch worker as n OS processes receiving from one queue, each with its own clients and caches, as Lambda runs invocations (1–${MAX_DISPATCH_PROCESSES}; default 1: on the workers' thread); with more than one, an experiment's rollouts run in its coordinator`,
  ),
  allowLoopbackEndpoints: flag(
    z.boolean().default(false),
    null,
    "let callers' policy endpoints and environments be on loopback (a laptop, tests); private ranges stay refused",
  ),
  allowEndpointCidr: flag(
    EndpointCidrs.default([]),
    "<cidr>",
    `let callers' policy endpoints and environments be in this private block (repeatable, at most ${MAX_ENDPOINT_CIDRS}; e.g. 10.0.0.0/8, fd00::/8); instance metadata addresses stay refused, loopback has its own flag`,
  ),
});
export type ServeOptions = z.infer<typeof ServeOptions>;

/** `fixtures-serve`'s options. */
export const FixturesServeOptions = z.strictObject({
  appworldServers: flag(int(0, 64).default(2), "<n>", "AppWorld-protocol servers (one live task each)"),
  appworldPort: flag(
    int(0, 65535).default(0),
    "<n>",
    "the first AppWorld server's port (the rest follow; 0 picks free ones)",
  ),
  swePort: flag(int(0, 65535).default(0), "<n>", "the SWE-ReX-protocol server's port (0 picks a free one)"),
  swe: flag(z.boolean().default(true), null, "start no SWE-ReX-protocol server", { negate: true }),
  trustedFixturesOnly: flag(
    z.boolean().default(false),
    null,
    "run without bubblewrap where it is missing: only for code you trust (the servers refuse to start unconfined otherwise)",
  ),
});
export type FixturesServeOptions = z.infer<typeof FixturesServeOptions>;

/** `env-serve`'s options. */
export const EnvServeOptions = z.strictObject({
  env: envFlag("env-serve", `the environment: ${familySummaries("env-serve")}`),
  port: flag(port.default(8000), "<n>", "port to listen on (0 picks a free one)"),
  host: flag(z.string().min(1).default("127.0.0.1"), "<h>", "address to bind"),
  tasksOut: flag(
    z.string().min(1).optional(),
    "<file>",
    "write the served training tasks as a rescue takes them (JSON), for your trainer's dataset",
  ),
  sessionIdleSeconds: flag(
    num((n) => n.positive().max(86_400)).default(OPENENV_SERVER_DEFAULTS.sessionIdleSeconds),
    "<s>",
    "close a WebSocket session (code 1001) after this many seconds without a message from its client",
  ),
  maxSessions: flag(
    int(1, 65_536).default(OPENENV_SERVER_DEFAULTS.maxSessions),
    "<n>",
    "WebSocket sessions at once (a further one is refused with 503)",
  ),
  maxSessionsPerAddress: flag(
    int(1, 65_536).default(OPENENV_SERVER_DEFAULTS.maxSessionsPerAddress),
    "<n>",
    "WebSocket sessions one remote address may hold at once (a further one is refused with 429)",
  ),
  ...familyFlags("env-serve"),
});
export type EnvServeOptions = z.infer<typeof EnvServeOptions>;
