import { streamHandle } from "hono/aws-lambda";
import { systemClock } from "@harness-s/core";
import { meteredAwsClients } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { createApp } from "./app.ts";
import { apiLambdaDeps } from "./lambda-deps.ts";

// Composition root of the `api` Lambda: config parsed once, SDK clients (instrumented: each
// request's DynamoDB capacity and SQS requests are metered) injected into adapters; with the
// BootstrapAdminKeyHash secret set, the first admin key is made here once (`withAdminBootstrap`).
// Its Function URL streams (RESPONSE_STREAM): the gateway's `stream: true` answers are server-sent
// events as they are written; every other answer goes through the same stream whole.
const config = awsConfigFromResources();
const deps = await apiLambdaDeps(config, meteredAwsClients(config.tables), systemClock);

export const handler = streamHandle(createApp(deps));
