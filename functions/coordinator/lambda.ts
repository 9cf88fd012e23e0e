import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { NotConfiguredError, systemClock } from "@harness-s/core";
import { DynamoBallotStore, DynamoExperimentStepStore, DynamoExperimentStore, DynamoPoolStore, DynamoRolloutStore, DynamoUsageMeter, RemotePolicy, SqsQueue, remoteUnitPolicies } from "@harness-s/adapters";
import { defaultEmbeddedSettings, embeddedSetups } from "../../packages/cli/src/embedded.ts";
import { awsConfigFromResources } from "../aws-config.ts";
import { COORDINATOR_SLICE_MS } from "../../stacks/workers.ts";
import { createCoordinatorHandler } from "./handler.ts";
import { queuedExperimentDeps } from "./queued-experiment.ts";

// Composition root of the `coordinator` worker: the embedded suite, policies created at the
// policy endpoint (PolicyEndpointUrl), rollouts through the dispatch queue, ballots through the
// vote queue; a run longer than one invocation continues in the next (COORDINATOR_SLICE_MS),
// mid-unit if need be: the unit's policy stays at the endpoint and its trainer state in the record.
// Without an endpoint a run is marked failed with NOT_CONFIGURED (its record says why).
const config = awsConfigFromResources();
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const sqs = new SQSClient({});
const endpoint = config.policyEndpointUrl;
const localFor = embeddedSetups(defaultEmbeddedSettings);

export const handler = createCoordinatorHandler({
  experiments: new DynamoExperimentStore(doc, config.tables),
  steps: new DynamoExperimentStepStore(doc, config.tables),
  meter: new DynamoUsageMeter(doc, config.tables),
  clock: systemClock,
  leaseMs: 16 * 60_000,
  ...(config.queues.coordinator ? { sliceMs: COORDINATOR_SLICE_MS, continueOn: new SqsQueue(sqs, config.queues.coordinator) } : {}),
  prepare: async (record) => {
    if (!endpoint) throw new NotConfiguredError("cloud experiments need the policy endpoint: set the PolicyEndpointUrl secret");
    if (!config.queues.dispatch || !config.queues.vote) throw new NotConfiguredError("the coordinator needs the dispatch and vote queues linked");
    let n = 0;
    const setup = { ...localFor(record.request.protocol), createPolicy: () => new RemotePolicy(endpoint, `${record.id}/attempt-${record.attempts}/p${++n}`) };
    const deps = await queuedExperimentDeps(setup, {
      pools: new DynamoPoolStore(doc, config.tables),
      ballots: new DynamoBallotStore(doc, config.tables),
      rollouts: new DynamoRolloutStore(doc, config.tables),
      dispatch: new SqsQueue(sqs, config.queues.dispatch),
      vote: new SqsQueue(sqs, config.queues.vote),
      endpointId: (_id, policy) => (policy as RemotePolicy).id,
    })(record);
    // Unit policies stay at the endpoint, so a unit can continue in the next invocation.
    return { ...deps, policies: remoteUnitPolicies(endpoint, (unit) => `${record.id}/${unit}/attempt-${record.attempts}`) };
  },
});
