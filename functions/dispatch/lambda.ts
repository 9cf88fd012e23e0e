import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { NotConfiguredError } from "@harness-s/core";
import { CachedPoolStore, DynamoPoolStore, DynamoRolloutStore } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { embeddedTaskSource } from "../embedded-tasks.ts";
import { createDispatchHandler } from "./handler.ts";

// Composition root of the `dispatch` worker. Rollouts need the policy endpoint: until its HTTP
// client lands, a requested rollout fails with NOT_CONFIGURED and ends in the DLQ (nothing lost).
const config = awsConfigFromResources();
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
export const handler = createDispatchHandler({
  pools: new CachedPoolStore(new DynamoPoolStore(doc, config.tables)),
  rollouts: new DynamoRolloutStore(doc, config.tables),
  tasks: embeddedTaskSource(),
  policies: {
    runner: () => {
      throw new NotConfiguredError("this deployment has no client for the policy endpoint (PolicyEndpointUrl) yet");
    },
  },
});
