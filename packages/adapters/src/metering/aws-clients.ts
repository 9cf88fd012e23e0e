import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { TableNames } from "../dynamo/table-specs.ts";
import { ConsumptionMeter, SQS_CHUNK_BYTES } from "./consumption.ts";

const DYNAMO_READS = new Set(["GetItemCommand", "QueryCommand", "ScanCommand", "BatchGetItemCommand", "TransactGetItemsCommand"]);
const DYNAMO_WRITES = new Set(["PutItemCommand", "UpdateItemCommand", "DeleteItemCommand", "BatchWriteItemCommand", "TransactWriteItemsCommand"]);

type Input = Record<string, unknown> & { TableName?: string; RequestItems?: Record<string, unknown>; TransactItems?: Record<string, { TableName?: string }>[] };

function tablesOf(input: Input): string[] {
  if (input.TableName) return [input.TableName];
  if (input.RequestItems) return Object.keys(input.RequestItems);
  return (input.TransactItems ?? []).flatMap((item) => Object.values(item).map((op) => op.TableName ?? ""));
}

/** Capacity units in a response's `ConsumedCapacity` (one entry, or one per table for batches and transactions). */
export function capacityUnits(consumed: unknown): number {
  const entries = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return entries.reduce((n: number, e: { CapacityUnits?: number }) => n + (Number.isFinite(e?.CapacityUnits) ? e.CapacityUnits! : 0), 0);
}

/**
 * Every read and write of `client` asks for its consumed capacity (`ReturnConsumedCapacity:
 * TOTAL`) and reports what the SDK returns; a conditional write that fails is reported as one
 * write unit (DynamoDB bills it; the error carries no count). Calls that touch only `exclude`
 * (the usage tables: metering's own writes) are left alone.
 *
 * @example
 * instrumentDynamo(new DynamoDBClient({}), consumption, [tables.Usage, tables.UsageDays]);
 */
export function instrumentDynamo(client: DynamoDBClient, meter: ConsumptionMeter, exclude: readonly string[] = []): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName);
      const read = DYNAMO_READS.has(name);
      const input = args.input as Input;
      if ((!read && !DYNAMO_WRITES.has(name)) || tablesOf(input).every((t) => exclude.includes(t))) return next(args);
      input.ReturnConsumedCapacity = "TOTAL";
      try {
        const out = await next(args);
        const units = capacityUnits((out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity);
        meter.record(read ? { dynamoReadUnits: units } : { dynamoWriteUnits: units });
        return out;
      } catch (err) {
        if (!read && (err as Error)?.name === "ConditionalCheckFailedException") meter.record({ dynamoWriteUnits: 1 });
        throw err;
      }
    },
    { step: "initialize", name: "harnessSConsumedCapacity", override: true },
  );
}

const bytes = (s: unknown) => (typeof s === "string" ? Buffer.byteLength(s) : 0);

/** The SQS requests one call is billed as: each 64 KB chunk of its payload (sent or received) is one, and every call at least one. */
export function sqsRequests(command: string, input: Record<string, unknown>, output: Record<string, unknown> | undefined): number {
  let payload = 0;
  if (command === "SendMessageCommand") payload = bytes(input.MessageBody);
  else if (command === "SendMessageBatchCommand") payload = ((input.Entries as { MessageBody?: string }[]) ?? []).reduce((n, e) => n + bytes(e.MessageBody), 0);
  else if (command === "ReceiveMessageCommand") payload = ((output?.Messages as { Body?: string }[]) ?? []).reduce((n, m) => n + bytes(m.Body), 0);
  return Math.max(1, Math.ceil(payload / SQS_CHUNK_BYTES));
}

/** Whether a failed attempt was answered by the service (an error status), not lost before any answer (a reset, a refused connection). */
function reachedService(err: unknown): boolean {
  const e = err as { $metadata?: { httpStatusCode?: number }; $response?: unknown } | undefined;
  return e?.$metadata?.httpStatusCode !== undefined || e?.$response !== undefined;
}

/**
 * Every HTTP request `client` makes that the service answers (each retry too, with an error
 * status or not) is reported as the SQS requests it is billed as ({@link sqsRequests}); an
 * attempt lost before any answer (a reset keep-alive socket the SDK retries) reached no queue
 * and is not.
 *
 * @example
 * instrumentSqs(new SQSClient({}), consumption);
 */
export function instrumentSqs(client: SQSClient, meter: ConsumptionMeter): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const bill = (output: Record<string, unknown> | undefined) =>
        meter.record({ sqsRequests: sqsRequests(String(context.commandName), args.input as Record<string, unknown>, output) });
      try {
        const out = await next(args);
        bill(out.output as unknown as Record<string, unknown>);
        return out;
      } catch (err) {
        if (reachedService(err)) bill(undefined);
        throw err;
      }
    },
    { step: "finalizeRequest", priority: "low", name: "harnessSSqsRequests", override: true },
  );
}

/**
 * A DynamoDB client and an SQS client that report what they consume to `consumption`; the usage
 * tables (metering's own writes) are left out.
 *
 * @example
 * const { doc, sqs, consumption } = meteredAwsClients(config.tables);
 */
export function meteredAwsClients(
  tables: Pick<TableNames, "Usage" | "UsageDays">,
  config: { dynamo?: DynamoDBClientConfig; sqs?: SQSClientConfig } = {},
  consumption: ConsumptionMeter = new ConsumptionMeter(),
) {
  const ddb = new DynamoDBClient(config.dynamo ?? {});
  const sqs = new SQSClient(config.sqs ?? {});
  instrumentDynamo(ddb, consumption, [tables.Usage, tables.UsageDays]);
  instrumentSqs(sqs, consumption);
  return { ddb, doc: DynamoDBDocumentClient.from(ddb), sqs, consumption };
}
