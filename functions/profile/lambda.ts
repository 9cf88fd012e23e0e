import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoProfileStore } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { createProfileHandler } from "./handler.ts";

// Composition root of the `profile` worker (SQS, ReportBatchItemFailures).
const config = awsConfigFromResources();
export const handler = createProfileHandler({ ledger: new DynamoProfileStore(DynamoDBDocumentClient.from(new DynamoDBClient({})), config.tables) });
