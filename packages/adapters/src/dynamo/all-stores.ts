import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Clock } from "@harness-s/core";
import { DynamoRateBlocks } from "../stores/rate-blocks/dynamo.ts";
import { DynamoApiKeyStore } from "../stores/api-keys/dynamo.ts";
import { DynamoKeyEventLog } from "../stores/key-events/dynamo.ts";
import { DynamoBallotStore } from "../stores/ballots/dynamo.ts";
import { DynamoDecisionStore } from "../stores/decisions/dynamo.ts";
import { DynamoPolicyEndpointStore } from "../stores/endpoints/dynamo.ts";
import { DynamoExperimentStepStore } from "../stores/experiment-steps/dynamo.ts";
import { DynamoExperimentStore } from "../stores/experiments/dynamo.ts";
import { DynamoGatewayEpisodeStore } from "../stores/gateway-episodes/dynamo.ts";
import { DynamoPoolStore } from "../stores/pools/dynamo.ts";
import { DynamoPoolEvolutionStore } from "../stores/pool-evolutions/dynamo.ts";
import { DynamoProfileStore } from "../stores/profiles/dynamo.ts";
import { DynamoRescueJobStore } from "../stores/rescue-jobs/dynamo.ts";
import { DynamoRescueSlots } from "../stores/rescue-slots/dynamo.ts";
import { DynamoRolloutStore, type RolloutWrites } from "../stores/rollouts/dynamo.ts";
import { DynamoUsageMeter } from "../stores/usage-meter/dynamo.ts";
import type { TableNames } from "./table-specs.ts";

/**
 * Every DynamoDB store over one set of tables, as the composition roots (Lambda, local stack)
 * wire them; `rolloutWrites`: how rollouts are written (each on its own, the default; or a
 * rescue's grouped: {@link ROLLOUT_WRITES}).
 *
 * @example
 * const stores = dynamoStores(DynamoDBDocumentClient.from(client), tableNames("local-"), { decisionTtlSeconds: 7 * 24 * 3600 });
 */
export function dynamoStores(
  doc: DynamoDBDocumentClient,
  tables: TableNames,
  opts: { decisionTtlSeconds?: number; clock?: Clock; rolloutWrites?: RolloutWrites } = {},
) {
  return {
    pools: new DynamoPoolStore(doc, tables),
    profiles: new DynamoProfileStore(doc, tables),
    decisions: new DynamoDecisionStore(doc, tables, opts.decisionTtlSeconds),
    keys: new DynamoApiKeyStore(doc, tables),
    keyEvents: new DynamoKeyEventLog(doc, tables),
    meter: new DynamoUsageMeter(doc, tables, opts.clock),
    jobs: new DynamoRescueJobStore(doc, tables),
    rollouts: new DynamoRolloutStore(doc, tables, opts.rolloutWrites),
    ballots: new DynamoBallotStore(doc, tables, opts.decisionTtlSeconds),
    experiments: new DynamoExperimentStore(doc, tables),
    experimentSteps: new DynamoExperimentStepStore(doc, tables),
    endpoints: new DynamoPolicyEndpointStore(doc, tables),
    rescueSlots: new DynamoRescueSlots(doc, tables),
    rateBlocks: new DynamoRateBlocks(doc, tables),
    gatewayEpisodes: new DynamoGatewayEpisodeStore(doc, tables),
    poolEvolutions: new DynamoPoolEvolutionStore(doc, tables),
  };
}
