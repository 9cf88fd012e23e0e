import { z } from "zod";
import { OPENENV_SERVER_DEFAULTS } from "@harness-s/adapters/openenv/server-limits";
import { GATEWAY_ENVS } from "@harness-s/functions/api/gateway-config";
import { flag } from "../declare.ts";
import { int, num, port } from "../flags.ts";
import { remoteEnvFlags } from "../remote-env-flags.ts";

// The serving commands' flags, apart from their declarations: the commands import them too.

/** The pools `serve` registers at start (more can be added over the API; the gateway routes between one of these). */
export const SERVED_POOLS = ["embedded", "dbbench"] as const;

/** `serve`'s options, as the command line gives them (strings) or a caller does (numbers). */
export const ServeOptions = z.strictObject({
  port: flag(port.default(18787), "<n>", "port to listen on (0 picks a free one)"),
  host: flag(z.string().min(1).default("127.0.0.1"), "<h>", "address to bind"),
  apiKey: flag(z.string().min(8, "an API key needs at least 8 characters").optional(), "<key>", "the admin API key to accept (default: a random one, printed)"),
  /** LLM voters' keys come from the environment variables the panel names. */
  voters: flag(z.string().min(1).optional(), "<file>", "a voter panel (JSON: statistical and OpenAI-compatible LLM voters, weights, quorum); default the statistical voters"),
  gatewayUpstream: flag(
    z.url({ protocol: /^https?$/, error: "an http:// or https:// URL (an OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1)" }).optional(),
    "<url>",
    "serve the Rank-1 harness gateway at /v1/gateway/chat/completions in front of this OpenAI-compatible model endpoint (key: HARNESS_S_GATEWAY_UPSTREAM_KEY)",
  ),
  gatewayModel: flag(z.string().min(1).optional(), "<name>", "the model name sent upstream (default: the agent's)"),
  gatewayPool: flag(
    z.enum(SERVED_POOLS, { error: `one of the pools serve registers: ${SERVED_POOLS.join(", ")}` }).default("embedded"),
    "<id>",
    "the pool the gateway routes between",
  ),
  gatewayEnv: flag(
    z.enum(GATEWAY_ENVS).default("generic"),
    "<env>",
    "how the gateway reads tool outputs: generic, dbbench, appworld (execute's output) or swe-gym (run, read, edit, write)",
  ),
  allowLoopbackEndpoints: flag(z.boolean().default(false), null, "let callers' policy endpoints and environments be on loopback (a laptop, tests); private ranges stay refused"),
});
export type ServeOptions = z.infer<typeof ServeOptions>;

/** `fixtures-serve`'s options. */
export const FixturesServeOptions = z.strictObject({
  appworldServers: flag(int(0, 64).default(2), "<n>", "AppWorld-protocol servers (one live task each)"),
  appworldPort: flag(int(0, 65535).default(0), "<n>", "the first AppWorld server's port (the rest follow; 0 picks free ones)"),
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
  env: flag(z.enum(["embedded", "dbbench", "appworld", "swe-gym"]), "<env>", "the environment (appworld and swe-gym at local fixture servers unless their URLs are given)"),
  port: flag(port.default(8000), "<n>", "port to listen on (0 picks a free one)"),
  host: flag(z.string().min(1).default("127.0.0.1"), "<h>", "address to bind"),
  engine: flag(z.enum(["mysql", "sqlite"]).default("sqlite"), "<e>", "with --env dbbench: the SQL engine"),
  mysqlUrl: flag(z.url().default("mysql://root@127.0.0.1:3306"), "<url>", "with --env dbbench and --engine mysql: the MySQL/MariaDB server"),
  tasksOut: flag(z.string().min(1).optional(), "<file>", "write the served training tasks as a rescue takes them (JSON), for your trainer's dataset"),
  sessionIdleSeconds: flag(
    num((n) => n.positive().max(86_400)).default(OPENENV_SERVER_DEFAULTS.sessionIdleSeconds),
    "<s>",
    "close a WebSocket session (code 1001) after this many seconds without a message from its client",
  ),
  maxSessions: flag(int(1, 65_536).default(OPENENV_SERVER_DEFAULTS.maxSessions), "<n>", "WebSocket sessions at once (a further one is refused with 503)"),
  maxSessionsPerAddress: flag(
    int(1, 65_536).default(OPENENV_SERVER_DEFAULTS.maxSessionsPerAddress),
    "<n>",
    "WebSocket sessions one remote address may hold at once (a further one is refused with 429)",
  ),
  ...remoteEnvFlags(2),
});
export type EnvServeOptions = z.infer<typeof EnvServeOptions>;
