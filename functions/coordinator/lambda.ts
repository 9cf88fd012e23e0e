import { S3Client } from "@aws-sdk/client-s3";
import { NotConfiguredError, systemClock } from "@harness-s/core";
import { envName } from "@harness-s/core/experiment";
import {
  CallerPolicyRunners,
  DynamoPolicyEndpointStore,
  DynamoPoolEvolutionStore,
  DynamoProfileStore,
  DynamoBallotStore,
  DynamoExperimentStepStore,
  DynamoExperimentStore,
  DynamoPoolStore,
  DynamoRolloutStore,
  RemotePolicy,
  S3ExperimentArtifacts,
  SqsQueue,
  TokenTrainer,
  policyProtocol,
  remoteUnitPolicies,
  tokenUnitPolicies,
  workerPolicyId,
} from "@harness-s/adapters";
import { renderExperimentReport } from "@harness-s/adapters/report";
import { TextEnvironment } from "@harness-s/envs";
import { sharedTokenPolicy, tokenClient } from "../policy-endpoint.ts";
import { defaultEmbeddedSettings, embeddedSetups } from "@harness-s/envs";
import { awsConfigFromResources, deployedOutbound } from "../aws-config.ts";
import { llmPoolProposer } from "../pool-proposer.ts";
import { lambdaClients } from "../lambda-clients.ts";
import { panelFromSecrets } from "../panel-config.ts";
import { COORDINATOR_SLICE_MS } from "../../infra/settings.ts";
import { createCoordinatorHandler } from "./handler.ts";
import { queuedExperimentDeps } from "./queued-experiment.ts";

// Composition root of the `coordinator` worker: the embedded suite, policies created at the
// policy endpoint (PolicyEndpointUrl), rollouts through the dispatch queue, ballots through the
// vote queue; a run longer than one invocation continues in the next (COORDINATOR_SLICE_MS),
// mid-unit if need be: the unit's policy stays at the endpoint and its trainer state in the record.
// Without an endpoint a run is marked failed with NOT_CONFIGURED (its record says why). An
// endpoint that speaks protocol v2 (the reference policy worker) gets token policies on the
// suite's text rendering; a v1 endpoint (policy-serve) the embedded policy's protocol.
const config = awsConfigFromResources();
const { doc, sqs, metering, meter } = lambdaClients(config);
const endpoint = config.policyEndpointUrl;
const localFor = embeddedSetups(defaultEmbeddedSettings);
// With a VoterPanel secret, experiments' router arms ask its voters (through the vote queue) with its weights, quorum and deadline.
const panel = panelFromSecrets({ panel: config.voterPanel, keys: config.voterKeys, llmApiKey: config.llmApiKey });

export const handler = createCoordinatorHandler({
  experiments: new DynamoExperimentStore(doc, config.tables),
  steps: new DynamoExperimentStepStore(doc, config.tables),
  meter,
  clock: systemClock,
  metering,
  leaseMs: 16 * 60_000,
  // A finished run's report and plots go to the Reports bucket (the API reads them there).
  ...(config.reportBucket ? { reports: { artifacts: new S3ExperimentArtifacts(new S3Client({}), config.reportBucket), render: renderExperimentReport } } : {}),
  ...(config.queues.coordinator ? { sliceMs: COORDINATOR_SLICE_MS, continueOn: new SqsQueue(sqs, config.queues.coordinator) } : {}),
  prepare: async (record) => {
    if (!endpoint) throw new NotConfiguredError("cloud experiments need the policy endpoint: set the PolicyEndpointUrl secret");
    // The API offers this deployment's experiments on the embedded suite only; any other run is refused here too, never run on the suite.
    if (record.request.env !== "embedded") throw new NotConfiguredError(`this deployment runs experiments on the embedded suite only, not ${envName(record.request.env)}`);
    if (!config.queues.dispatch || !config.queues.vote) throw new NotConfiguredError("the coordinator needs the dispatch and vote queues linked");
    let n = 0;
    const v2 = (await policyProtocol(endpoint, config.policyEndpointToken)) === 2;
    const client = tokenClient(endpoint, config.policyEndpointToken, (used) => metering.consumption.record(used));
    const embedded = { ...localFor(record.request.protocol), ...(panel ? { voters: panel.voters, panel } : {}) };
    const idOf = () => `${record.id}/attempt-${record.attempts}/p${++n}`;
    const setup = v2
      ? {
          ...embedded,
          env: new TextEnvironment(embedded.env),
          createPolicy: (seed: number) => new TokenTrainer(client, { ...sharedTokenPolicy, policyId: workerPolicyId(idOf()), seed }),
        }
      : { ...embedded, createPolicy: () => new RemotePolicy(endpoint, idOf()) };
    const deps = await queuedExperimentDeps(setup, {
      pools: new DynamoPoolStore(doc, config.tables),
      ballots: new DynamoBallotStore(doc, config.tables),
      rollouts: new DynamoRolloutStore(doc, config.tables),
      dispatch: new SqsQueue(sqs, config.queues.dispatch),
      vote: new SqsQueue(sqs, config.queues.vote),
      endpointId: (_id, policy) => (policy as RemotePolicy | TokenTrainer).id,
    })(record);
    // Unit policies stay at the endpoint, so a unit can continue in the next invocation.
    const unitId = (unit: string) => `${record.id}/${unit}/attempt-${record.attempts}`;
    return { ...deps, policies: v2 ? tokenUnitPolicies(client, unitId, sharedTokenPolicy) : remoteUnitPolicies(endpoint, unitId) };
  },
  // Pool evolutions for callers' environments: every rollout at the caller's endpoint, in its environment (public addresses or EndpointCidrs).
  poolEvolution: {
    evolutions: new DynamoPoolEvolutionStore(doc, config.tables),
    pools: new DynamoPoolStore(doc, config.tables),
    profiles: new DynamoProfileStore(doc, config.tables),
    callers: new CallerPolicyRunners({ endpoints: new DynamoPolicyEndpointStore(doc, config.tables), outbound: deployedOutbound(config), clock: systemClock }),
    ...(config.poolProposer ? { proposer: llmPoolProposer(config.poolProposer, config.llmApiKey) } : {}),
  },
});
