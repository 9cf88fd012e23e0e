import { S3Client } from "@aws-sdk/client-s3";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { NotConfiguredError, systemClock } from "@harness-s/core";
import type { UsageMeter } from "@harness-s/core/billing";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import {
  DynamoBallotStore,
  DynamoExperimentStepStore,
  DynamoExperimentStore,
  DynamoPolicyEndpointStore,
  DynamoPoolEvolutionStore,
  DynamoPoolStore,
  DynamoProfileStore,
  DynamoRolloutStore,
  S3ExperimentArtifacts,
  SqsQueue,
} from "@harness-s/adapters/stores";
import type { OutboundPolicy } from "@harness-s/adapters/net";
import { renderExperimentReport } from "@harness-s/adapters/report";
import { deployedOutbound, type AwsConfig } from "../aws-config.ts";
import { panelFromSecrets } from "../panel-config.ts";
import { llmPoolProposer } from "../pool-proposer.ts";
import type { WorkerMetering } from "../worker-metering.ts";
import { COORDINATOR_SLICE_MS, SERVED_MODELS } from "../../infra/settings.ts";
import type { createCoordinatorHandler } from "./handler.ts";
import { deployedRun, type DeployedRunContext } from "./deployed-runs.ts";

/** The coordinator's SDK clients and meters (`lambdaClients`); `s3` for the Reports bucket (default: the SDK's). */
export interface CoordinatorClients {
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  metering: WorkerMetering;
  meter: UsageMeter;
  s3?: S3Client;
}

/**
 * The deployed coordinator's deps from its parsed config and clients (its composition root calls
 * this with the linked resources; a test with DynamoDB Local's clients): runs on the embedded suite
 * or a caller's own OpenEnv server (`deployedRun`), the policy endpoint serving the stacks'
 * SERVED_MODELS (PolicyEndpointUrl, or the managed GPU endpoint); a run longer than one invocation
 * continues in the next (COORDINATOR_SLICE_MS), mid-unit if need be: the unit's policy stays at
 * the endpoint and its trainer state in the record. Without an endpoint a run is marked failed
 * with NOT_CONFIGURED (its record says why). Pool evolutions for callers' environments run here too.
 * `outbound` is where callers' servers may be reached: the deployment's guard (public addresses and
 * EndpointCidrs, never loopback); a test on one machine opens loopback instead.
 *
 * @example
 * const config = awsConfigFromResources();
 * export const handler = createCoordinatorHandler(deployedCoordinatorDeps(config, lambdaClients(config)));
 */
export function deployedCoordinatorDeps(
  config: AwsConfig,
  clients: CoordinatorClients,
  outbound: OutboundPolicy = deployedOutbound(config),
): Parameters<typeof createCoordinatorHandler>[0] {
  const { doc, sqs, metering, meter } = clients;
  const endpoint = config.policyEndpointUrl;
  const stores = {
    pools: new DynamoPoolStore(doc, config.tables),
    ballots: new DynamoBallotStore(doc, config.tables),
    rollouts: new DynamoRolloutStore(doc, config.tables),
    profiles: new DynamoProfileStore(doc, config.tables),
  };
  // With a VoterPanel secret, experiments' router arms on the suite ask its voters (through the vote queue) with its
  // weights, quorum and deadline.
  const panel = panelFromSecrets({ panel: config.voterPanel, keys: config.voterKeys, llmApiKey: config.llmApiKey });
  const ctx = (url: string): DeployedRunContext => ({
    served: SERVED_MODELS.map((m) => ({
      name: m.name,
      url,
      ...(config.policyEndpointToken ? { token: config.policyEndpointToken } : {}),
    })),
    stores,
    queues: {
      ...(config.queues.dispatch ? { dispatch: new SqsQueue(sqs, config.queues.dispatch) } : {}),
      ...(config.queues.vote ? { vote: new SqsQueue(sqs, config.queues.vote) } : {}),
    },
    outbound,
    ...(panel ? { panel } : {}),
    meter: (used) => metering.consumption.record(used),
  });
  return {
    experiments: new DynamoExperimentStore(doc, config.tables),
    steps: new DynamoExperimentStepStore(doc, config.tables),
    meter,
    clock: systemClock,
    metering,
    leaseMs: 16 * 60_000,
    // A finished run's report and plots go to the Reports bucket (the API reads them there).
    ...(config.reportBucket
      ? {
          reports: {
            artifacts: new S3ExperimentArtifacts(clients.s3 ?? new S3Client({}), config.reportBucket),
            render: renderExperimentReport,
          },
        }
      : {}),
    ...(config.queues.coordinator
      ? { sliceMs: COORDINATOR_SLICE_MS, continueOn: new SqsQueue(sqs, config.queues.coordinator) }
      : {}),
    prepare: async (record) => {
      const run = deployedRun(record);
      if (!endpoint)
        throw new NotConfiguredError("cloud experiments need the policy endpoint: set the PolicyEndpointUrl secret");
      return run(record, ctx(endpoint));
    },
    // Pool evolutions for callers' environments: every rollout at the caller's endpoint, in its environment (public
    // addresses or EndpointCidrs).
    poolEvolution: {
      evolutions: new DynamoPoolEvolutionStore(doc, config.tables),
      pools: stores.pools,
      profiles: stores.profiles,
      callers: new CallerPolicyRunners({
        endpoints: new DynamoPolicyEndpointStore(doc, config.tables),
        outbound,
        clock: systemClock,
      }),
      ...(config.poolProposer ? { proposer: llmPoolProposer(config.poolProposer, config.llmApiKey) } : {}),
    },
  };
}
