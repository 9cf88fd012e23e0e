import { DynamoGatewayEpisodeStore } from "./gateway-episode-store.ts";
import { DynamoPolicyEndpointStore } from "./endpoint-store.ts";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Clock } from "@harness-s/core";
import { DynamoBallotStore, DynamoExperimentStepStore, DynamoExperimentStore } from "./experiment-stores.ts";
import { DynamoProfileStore } from "./profile-store.ts";
import { DynamoRescueSlots } from "./rescue-slots.ts";
import { DynamoRolloutStore } from "./rollout-store.ts";
import { DynamoApiKeyStore, DynamoDecisionStore, DynamoPoolStore, DynamoRescueJobStore, DynamoUsageMeter } from "./stores.ts";
import type { TableNames } from "./table-specs.ts";

/**
 * Every DynamoDB store over one set of tables, as the composition roots (Lambda, local stack)
 * wire them.
 *
 * @example
 * const stores = dynamoStores(DynamoDBDocumentClient.from(client), tableNames("local-"), { decisionTtlSeconds: 7 * 24 * 3600 });
 */
export function dynamoStores(doc: DynamoDBDocumentClient, tables: TableNames, opts: { decisionTtlSeconds?: number; clock?: Clock } = {}) {
  return {
    pools: new DynamoPoolStore(doc, tables),
    profiles: new DynamoProfileStore(doc, tables),
    decisions: new DynamoDecisionStore(doc, tables, opts.decisionTtlSeconds),
    keys: new DynamoApiKeyStore(doc, tables),
    meter: new DynamoUsageMeter(doc, tables, opts.clock),
    jobs: new DynamoRescueJobStore(doc, tables),
    rollouts: new DynamoRolloutStore(doc, tables),
    ballots: new DynamoBallotStore(doc, tables, opts.decisionTtlSeconds),
    experiments: new DynamoExperimentStore(doc, tables),
    experimentSteps: new DynamoExperimentStepStore(doc, tables),
    endpoints: new DynamoPolicyEndpointStore(doc, tables),
    rescueSlots: new DynamoRescueSlots(doc, tables),
    gatewayEpisodes: new DynamoGatewayEpisodeStore(doc, tables),
  };
}
