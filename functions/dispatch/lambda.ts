import { NotConfiguredError, systemClock } from "@harness-s/core";
import { rolloutRunners } from "@harness-s/core/dispatch";
import {
  CachedPoolStore,
  DynamoRunningPlaces,
  FullSlotsMemo,
  SqsQueue,
  DynamoPolicyEndpointStore,
  DynamoPoolStore,
  DynamoRescueJobStore,
  DynamoRolloutStore,
} from "@harness-s/adapters/stores";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { WORKERS } from "../../infra/settings.ts";
import { dispatchEndpoints } from "../policy-endpoint.ts";
import { awsConfigFromResources, deployedOutbound } from "../aws-config.ts";
import { lambdaClients } from "../lambda-clients.ts";
import { builtinEnvironments, embeddedTaskSource } from "../embedded-tasks.ts";
import { createDispatchHandler } from "./handler.ts";

// Composition root of the `dispatch` worker: the episode loop runs here, actions are sampled at
// the policy endpoint (PolicyEndpointUrl). Without one, a rollout fails with NOT_CONFIGURED and
// its message ends in the DLQ (nothing lost).
const config = awsConfigFromResources();
const { doc, sqs, metering, meter } = lambdaClients(config);
// Its own queue is linked to it: a key past its share of running caller rollouts waits on it, delayed.
const requeue = config.queues.dispatch ? new SqsQueue(sqs, config.queues.dispatch) : undefined;
const endpoint = config.policyEndpointUrl;
export const handler = createDispatchHandler({
  metering,
  pools: new CachedPoolStore(new DynamoPoolStore(doc, config.tables)),
  rollouts: new DynamoRolloutStore(doc, config.tables),
  jobs: new DynamoRescueJobStore(doc, config.tables),
  meter,
  maxReceives: WORKERS.dispatch.retry,
  ...(requeue
    ? {
        fairness: {
          slots: new FullSlotsMemo(new DynamoRunningPlaces(doc, config.tables), systemClock),
          clock: systemClock,
          requeue,
        },
      }
    : {}),
  tasks: embeddedTaskSource(),
  runners: rolloutRunners({
    service: endpoint
      ? dispatchEndpoints(endpoint, config.policyEndpointToken, (used) => metering.consumption.record(used))
      : {
          runner: async () => {
            throw new NotConfiguredError(
              "set the PolicyEndpointUrl secret to the policy endpoint (e.g. `harness-s policy-serve`)",
            );
          },
        },
    // A caller's rescue samples its own registered endpoint, at public addresses or the operator's EndpointCidrs.
    caller: new CallerPolicyRunners({
      endpoints: new DynamoPolicyEndpointStore(doc, config.tables),
      outbound: deployedOutbound(config),
      clock: systemClock,
      builtin: builtinEnvironments(),
    }),
  }),
});
