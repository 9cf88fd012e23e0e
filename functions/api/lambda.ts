import { streamHandle } from "hono/aws-lambda";
import { systemClock } from "@harness-s/core";
import { meteredAwsClients } from "@harness-s/adapters/metering";
import { join } from "node:path";
import { CONSOLE_BUNDLE } from "../../infra/settings.ts";
import { awsConfigFromResources } from "../aws-config.ts";
import { createApp } from "./app.ts";
import { loadConsoleAssets } from "./console.ts";
import { apiLambdaDeps } from "./lambda-deps.ts";

// Composition root of the `api` Lambda: config parsed once, SDK clients (instrumented: each
// request's DynamoDB capacity and SQS requests are metered) injected into adapters; with the
// BootstrapAdminKeyHash secret set, the first admin key is made here once (`withAdminBootstrap`).
// Its Function URL streams (RESPONSE_STREAM): the gateway's `stream: true` answers are server-sent
// events as they are written; every other answer goes through the same stream whole.
const config = awsConfigFromResources();
// The web console's files, copied beside the handler by the stack (CONSOLE_BUNDLE), read once; none copied: no
// /console.
const consoleAssets = loadConsoleAssets(join(process.env.LAMBDA_TASK_ROOT ?? process.cwd(), CONSOLE_BUNDLE.to));
const deps = {
  ...(await apiLambdaDeps(config, meteredAwsClients(config.tables), systemClock)),
  ...(consoleAssets ? { console: consoleAssets } : {}),
};

export const handler = streamHandle(createApp(deps));
