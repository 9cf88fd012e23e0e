import { DynamoProfileStore } from "@harness-s/adapters/stores";
import { awsConfigFromResources } from "../aws-config.ts";
import { lambdaClients } from "../lambda-clients.ts";
import { createProfileHandler } from "./handler.ts";

// Composition root of the `profile` worker (SQS, ReportBatchItemFailures).
const config = awsConfigFromResources();
const { doc, metering } = lambdaClients(config);
export const handler = createProfileHandler({ ledger: new DynamoProfileStore(doc, config.tables), metering });
