// The functions' deployed settings, read by the stacks that deploy them (stacks/) and at run time
// by the handlers and the local stack (functions/). Dependency-free: no `sst` global, no package
// import, so that the Lambda bundles, the SST config and the tests all import it as it is.
/** The Lambda runtime the project is tested on (SST 4.17 would default to nodejs24.x). */
export const LAMBDA_RUNTIME = "nodejs22.x" as const;

/**
 * The API function's timeout: above the gateway's wait for one completion (UPSTREAM_TIMEOUT_MS, 120 s) and its lease.
 */
export const API_TIMEOUT = "180 seconds" as const;
/** The API function's memory (Lambda bills its duration × this: the cost of goods meters it so). */
export const API_MEMORY = "1024 MB" as const;
/**
 * The most a request body may hold at the API (the gateway's conversations: GATEWAY_LIMITS), deployed and local alike.
 */
export const API_LAMBDA_MAX_BODY_BYTES = 256 * 1024;
/**
 * The web console's built files (`npm run build:console`), copied into the API function beside its handler: the
 * function URL serves them at /console.
 */
export const CONSOLE_BUNDLE = { from: "console/dist", to: "console" } as const;

/** Per worker: how long one message may take, its memory, the queue's batch size and receives before the DLQ. */
export const WORKERS = {
  profile: {
    handler: "functions/profile/lambda.handler",
    memory: "1024 MB",
    timeout: "20 seconds",
    visibility: "30 seconds",
    batch: 10,
    retry: 3,
  },
  vote: {
    handler: "functions/vote/lambda.handler",
    memory: "1024 MB",
    timeout: "30 seconds",
    visibility: "60 seconds",
    batch: 5,
    retry: 3,
  },
  dispatch: {
    handler: "functions/dispatch/lambda.handler",
    memory: "1024 MB",
    timeout: "5 minutes",
    visibility: "6 minutes",
    batch: 10,
    retry: 3,
  },
  coordinator: {
    handler: "functions/coordinator/lambda.handler",
    memory: "1024 MB",
    timeout: "15 minutes",
    visibility: "16 minutes",
    batch: 1,
    retry: 2,
  },
} as const;

/**
 * The dispatch DLQ's consumer: a rescue's slot whose message reached the DLQ (every delivery's process ended first) is
 * failed with ROLLOUT_LOST, so its rescue ends (`functions/dispatch/dead-letters.ts`).
 */
export const DISPATCH_DEAD_LETTERS = {
  handler: "functions/dispatch/dead-letters-lambda.handler",
  memory: "1024 MB",
  timeout: "30 seconds",
  batch: 10,
} as const;

/**
 * The most `dispatch` invocations at once (batches of `WORKERS.dispatch.batch`): the deployed event
 * source's maximum concurrency, and the local stack's. Above any one key's share of running caller
 * rollouts (`CALLER_ROLLOUT_FAIRNESS.perKeyRunning` in core), so a key whose endpoint never answers
 * leaves workers free for every other key.
 */
export const DISPATCH_CONCURRENCY = 64;

/**
 * A coordinator invocation starts no new (arm, seed) unit after this long; it saves what it
 * finished and re-queues the run, so one unit must fit in the rest of the 15-minute timeout.
 */
export const COORDINATOR_SLICE_MS = 9 * 60_000;

/** "1024 MB" → 1 (GB, as Lambda bills GB-seconds). */
export function memoryGb(memory: `${number} MB`): number {
  return Number(memory.split(" ")[0]) / 1024;
}

/**
 * The base models the GPU endpoint serves, declared once: each from its folder on the instance
 * (`folder`), with what the API lists of it (`GET /v1/models`: ServedModel in packages/core, whose
 * defaults price a model that names no price). An experiment's `model` names one of them.
 */
export const SERVED_MODELS = [
  {
    name: "qwen2.5-0.5b-instruct",
    folder: "/opt/harness-s/models/current",
    parameters: 494_032_768,
    contextTokens: 32_768,
    chatTemplate: "chatml",
  },
] as const;
