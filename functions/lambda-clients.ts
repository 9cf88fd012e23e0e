import { DynamoUsageMeter } from "@harness-s/adapters/stores";
import { meteredAwsClients } from "@harness-s/adapters/metering";
import { spendTellingMeter } from "@harness-s/core/billing";
import type { AwsConfig } from "./aws-config.ts";
import { stdioEvents } from "./sqs-worker.ts";
import type { WorkerMetering } from "./worker-metering.ts";

/**
 * A function's SDK clients, instrumented so that what each request or message consumes is
 * metered (DynamoDB capacity, SQS requests), the metering its handler is given, and its usage
 * meter, which tells each write's cost of goods on the function's log (the dashboard's spend).
 *
 * @example
 * const { doc, sqs, metering, meter } = lambdaClients(awsConfigFromResources());
 * // A test's: the same clients at DynamoDB Local.
 * lambdaClients(config, { dynamo: { endpoint, region: "us-east-1", credentials: localCredentials } });
 */
export function lambdaClients(config: AwsConfig, sdk: Parameters<typeof meteredAwsClients>[1] = {}) {
  const { doc, sqs, consumption } = meteredAwsClients(config.tables, sdk);
  const meter = spendTellingMeter(new DynamoUsageMeter(doc, config.tables), stdioEvents, config.priceList);
  const metering: WorkerMetering = { consumption, meter, memoryGb: config.memoryGb };
  return { doc, sqs, metering, meter };
}
