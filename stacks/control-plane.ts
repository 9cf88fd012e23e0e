import { storage } from "./storage";

/** The Lambda runtime the project is tested on (SST 4.17 would default to nodejs24.x). */
export const LAMBDA_RUNTIME = "nodejs22.x" as const;

/**
 * The serverless control plane that exists so far: tables, the profile queue with its DLQ and
 * worker (partial batch responses), the router API as a Function URL, and the secrets the
 * policy endpoint and LLM voters will use. The vote, dispatch and coordinator workers follow.
 */
export async function controlPlane() {
  const tables = storage();
  const policyEndpoint = new sst.Secret("PolicyEndpointUrl");
  const llmApiKey = new sst.Secret("LlmApiKey");

  const profileDlq = new sst.aws.Queue("ProfileDlq");
  const profileQueue = new sst.aws.Queue("ProfileQueue", { dlq: { queue: profileDlq.arn, retry: 3 }, visibilityTimeout: "30 seconds" });
  profileQueue.subscribe(
    { handler: "functions/profile/lambda.handler", runtime: LAMBDA_RUNTIME, timeout: "20 seconds", link: [tables.Profiles, tables.Processed] },
    { batch: { size: 10, partialResponses: true } },
  );

  const api = new sst.aws.Function("Api", {
    handler: "functions/api/lambda.handler",
    runtime: LAMBDA_RUNTIME,
    timeout: "10 seconds",
    url: true,
    link: [tables.Pools, tables.Profiles, tables.Decisions, tables.ApiKeys, tables.Usage, tables.Processed, profileQueue, policyEndpoint, llmApiKey],
  });

  return { api: api.url, profileQueue: profileQueue.url };
}
