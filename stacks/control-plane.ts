// The control plane's SST components (DynamoDB tables, SQS queues with DLQs, Lambda functions,
// the router API, secrets) are defined here by issue 3. Until then the app deploys nothing.
export async function controlPlane(): Promise<Record<string, never>> {
  return {};
}
