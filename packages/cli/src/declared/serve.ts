import { z } from "zod";
import { defaultEmbeddedSettings } from "@harness-s/envs";
import { declareCommand, flag } from "../declare.ts";
import { num, port } from "../flags.ts";
import { EnvServeOptions, FixturesServeOptions, ServeOptions } from "./serve-options.ts";

export const serve = declareCommand({
  name: "serve",
  summary:
    'Serve the router API locally over HTTP against DynamoDB Local, with the embedded pool registered as "embedded"',
  flags: ServeOptions,
  run: async (o) => (await import("../commands/serve.ts")).serveCommand(o),
});

export const fixturesServe = declareCommand({
  name: "fixtures-serve",
  summary:
    "Start the local AppWorld-protocol and SWE-ReX-protocol servers (fixture tasks and repositories written here; agent code confined by bubblewrap) on loopback",
  flags: FixturesServeOptions,
  run: async (o) => (await import("../commands/fixtures-serve.ts")).fixturesServeCommand(o),
});

export const envServe = declareCommand({
  name: "env-serve",
  summary:
    "Serve a built-in environment over the OpenEnv protocol (a WebSocket session per episode at /ws), for your own trainer or a rescue to use",
  flags: EnvServeOptions,
  run: async (o) => (await import("../commands/env-serve.ts")).envServeCommand(o),
});

export const policyServe = declareCommand({
  name: "policy-serve",
  summary:
    "Serve the embedded policy behind the policy endpoint's HTTP protocol (what the dispatch and coordinator workers call)",
  flags: z.strictObject({
    port: flag(port.default(8700), "<n>", "port to listen on"),
    host: flag(z.string().min(1).default("127.0.0.1"), "<h>", "address to bind"),
    cueStrength: flag(
      num((n) => n.min(0)).default(defaultEmbeddedSettings.cueStrength),
      "<b>",
      "the policy's fixed logit bonus for a hinted action",
    ),
  }),
  run: async (o) => (await import("../commands/policy-serve.ts")).policyServeCommand(o),
});
