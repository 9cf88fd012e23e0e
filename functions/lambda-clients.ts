import { DynamoUsageMeter, meteredAwsClients } from "@harness-s/adapters";
import type { AwsConfig } from "./aws-config.ts";
import type { WorkerMetering } from "./worker-metering.ts";

/**
 * A function's SDK clients, instrumented so that what each request or message consumes is
 * metered (DynamoDB capacity, SQS requests), and the metering its handler is given.
 *
 * @example
 * const { doc, sqs, metering } = lambdaClients(awsConfigFromResources());
 */
export function lambdaClients(config: AwsConfig) {
  const { doc, sqs, consumption } = meteredAwsClients(config.tables);
  const metering: WorkerMetering = { consumption, meter: new DynamoUsageMeter(doc, config.tables), memoryGb: config.memoryGb };
  return { doc, sqs, metering };
}
