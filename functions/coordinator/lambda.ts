import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { NotConfiguredError, systemClock } from "@harness-s/core";
import { DynamoExperimentStore, DynamoUsageMeter } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { createCoordinatorHandler } from "./handler.ts";

// Composition root of the `coordinator` worker. A cloud run needs policies created at the policy
// endpoint; until that client lands, a run is marked failed with NOT_CONFIGURED (its record says why).
const config = awsConfigFromResources();
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
export const handler = createCoordinatorHandler({
  experiments: new DynamoExperimentStore(doc, config.tables),
  meter: new DynamoUsageMeter(doc, config.tables),
  clock: systemClock,
  leaseMs: 16 * 60_000,
  prepare: () => Promise.reject(new NotConfiguredError("cloud experiments need a policy endpoint client (PolicyEndpointUrl), which this deployment does not have yet")),
});
