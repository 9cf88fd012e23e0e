import { DynamoRescueJobStore, DynamoRolloutStore } from "@harness-s/adapters/stores";
import { WORKERS } from "../../infra/settings.ts";
import { awsConfigFromResources } from "../aws-config.ts";
import { lambdaClients } from "../lambda-clients.ts";
import { createDeadLetterHandler } from "./dead-letters.ts";

// Composition root of the dispatch DLQ's consumer: a rescue's slot whose every delivery died is failed (ROLLOUT_LOST).
const config = awsConfigFromResources();
const { doc } = lambdaClients(config);
export const handler = createDeadLetterHandler({
  jobs: new DynamoRescueJobStore(doc, config.tables),
  rollouts: new DynamoRolloutStore(doc, config.tables),
  maxReceives: WORKERS.dispatch.retry,
});
