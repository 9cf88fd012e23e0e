// Stores by port: each port's in-memory and DynamoDB adapters side by side (and its caching decorator), and the queues.
export { MemoryApiKeyStore } from "./api-keys/memory.ts";
export { ADMIN_ANCHORS_ID, DynamoApiKeyStore } from "./api-keys/dynamo.ts";
export { CachedKeyStore } from "./api-keys/cached.ts";
export { MemoryKeyEventLog } from "./key-events/memory.ts";
export { DynamoKeyEventLog } from "./key-events/dynamo.ts";
export { MemoryBallotStore } from "./ballots/memory.ts";
export { DynamoBallotStore } from "./ballots/dynamo.ts";
export { DECISION_CACHE_LIMITS, MemoryDecisionCache } from "./decision-cache/memory.ts";
export { MemoryDecisionStore } from "./decisions/memory.ts";
export { DynamoDecisionStore } from "./decisions/dynamo.ts";
export { MemoryPolicyEndpointStore } from "./endpoints/memory.ts";
export { DynamoPolicyEndpointStore } from "./endpoints/dynamo.ts";
export { MemoryExperimentStore } from "./experiments/memory.ts";
export { DynamoExperimentStore } from "./experiments/dynamo.ts";
export { MemoryExperimentStepStore } from "./experiment-steps/memory.ts";
export { DynamoExperimentStepStore } from "./experiment-steps/dynamo.ts";
export { MemoryExperimentArtifacts } from "./experiment-artifacts/memory.ts";
export { FolderExperimentArtifacts } from "./experiment-artifacts/folder.ts";
export { S3ExperimentArtifacts } from "./experiment-artifacts/s3.ts";
export {
  type MemoryEpisodeLimits,
  MEMORY_EPISODE_LIMITS,
  MemoryGatewayEpisodeStore,
} from "./gateway-episodes/memory.ts";
export { DynamoGatewayEpisodeStore } from "./gateway-episodes/dynamo.ts";
export { MemoryPoolStore } from "./pools/memory.ts";
export { DynamoPoolStore } from "./pools/dynamo.ts";
export { CachedPoolStore } from "./pools/cached.ts";
export { MemoryPoolEvolutionStore } from "./pool-evolutions/memory.ts";
export { DynamoPoolEvolutionStore } from "./pool-evolutions/dynamo.ts";
export { MemoryProfileStore } from "./profiles/memory.ts";
export { DynamoProfileStore } from "./profiles/dynamo.ts";
export { MemoryQueue } from "./queue/memory.ts";
export { MemoryRescueJobStore } from "./rescue-jobs/memory.ts";
export { DynamoRescueJobStore } from "./rescue-jobs/dynamo.ts";
export { MemoryRescueSlots } from "./rescue-slots/memory.ts";
export { DynamoRescueSlots } from "./rescue-slots/dynamo.ts";
export { DynamoRunningPlaces, PLACE_ATTEMPTS, freePlaces, placeName, type PlaceStats } from "./rescue-slots/places.ts";
export { FULL_MEMO_MS, FullSlotsMemo } from "./rescue-slots/full-memo.ts";
export { MemoryRolloutStore } from "./rollouts/memory.ts";
export { CHUNK_BYTES, ROLLOUT_WRITES, type RolloutWrites, DynamoRolloutStore } from "./rollouts/dynamo.ts";
export { MemoryUsageMeter } from "./usage-meter/memory.ts";
export { DynamoUsageMeter } from "./usage-meter/dynamo.ts";
export type { CacheOptions } from "./read-cache.ts";
export { createQueueWithDlq, SQS_MAX_DELAY_SECONDS, SqsQueue } from "./queue/sqs.ts";
export { DynamoRateBlocks } from "./rate-blocks/dynamo.ts";
export { MemoryRateBlocks } from "./rate-blocks/memory.ts";
