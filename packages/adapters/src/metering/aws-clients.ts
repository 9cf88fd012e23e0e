import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { TableNames } from "../dynamo/table-specs.ts";
import { ConsumptionMeter, SQS_CHUNK_BYTES } from "./consumption.ts";

const DYNAMO_READS = new Set([
  "GetItemCommand",
  "QueryCommand",
  "ScanCommand",
  "BatchGetItemCommand",
  "TransactGetItemsCommand",
]);
const DYNAMO_WRITES = new Set([
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  "BatchWriteItemCommand",
  "TransactWriteItemsCommand",
]);

type Input = Record<string, unknown> & {
  TableName?: string;
  RequestItems?: Record<string, unknown>;
  TransactItems?: Record<string, { TableName?: string }>[];
};

function tablesOf(input: Input): string[] {
  if (input.TableName) return [input.TableName];
  if (input.RequestItems) return Object.keys(input.RequestItems);
  return (input.TransactItems ?? []).flatMap((item) => Object.values(item).map((op) => op.TableName ?? ""));
}

/** Capacity units in a response's `ConsumedCapacity` (one entry, or one per table for batches and transactions). */
export function capacityUnits(consumed: unknown): number {
  const entries = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return entries.reduce(
    (n: number, e: { CapacityUnits?: number }) => n + (Number.isFinite(e?.CapacityUnits) ? e.CapacityUnits! : 0),
    0,
  );
}

const ATTRIBUTE_TYPES = new Set(["S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"]);

/**
 * Bytes of a value, at least as DynamoDB counts them: a document client's native value (a string,
 * bytes, a number as 1 byte, the least it can be, a list or map by its parts) or the wire's typed
 * one (`{ S: … }`); a map's or list's own overhead is left out, so this never counts more.
 */
function valueBytes(v: unknown): number {
  if (typeof v === "string") return Buffer.byteLength(v);
  if (v instanceof Uint8Array) return v.byteLength;
  if (Array.isArray(v) || v instanceof Set) return [...v].reduce((n: number, e) => n + valueBytes(e), 0);
  if (typeof v !== "object" || v === null) return 1;
  const entries = Object.entries(v);
  const [type, inner] = entries[0] ?? [];
  // A typed value's tag is not part of its size (a native map of one such key is then counted a byte or two short:
  // still at least).
  if (entries.length === 1 && ATTRIBUTE_TYPES.has(type!))
    return type === "M" ? itemBytes(inner as Record<string, unknown>) : type === "N" ? 1 : valueBytes(inner);
  return itemBytes(v as Record<string, unknown>);
}

/** An item's size, at least as DynamoDB counts it: its attributes' names and values. */
const itemBytes = (item: Record<string, unknown>): number =>
  Object.entries(item).reduce((n, [name, v]) => n + Buffer.byteLength(name) + valueBytes(v), 0);

/**
 * The least write units a transaction is billed in the cloud: twice each item's (a put's by its
 * size, 1 KB a unit; any other item at least one). DynamoDB Local reports one item's units for a
 * whole transaction, so a local stack meters this when it is more than the reply says.
 */
export function transactionWriteUnits(input: Input): number {
  return (input.TransactItems ?? []).reduce((n, op) => {
    const put = (op as { Put?: { Item?: Record<string, unknown> } }).Put;
    return n + 2 * (put?.Item ? Math.max(1, Math.ceil(itemBytes(put.Item) / 1024)) : 1);
  }, 0);
}

/**
 * Every read and write of `client` asks for its consumed capacity (`ReturnConsumedCapacity:
 * TOTAL`) and reports what the SDK returns (a transaction at least {@link transactionWriteUnits});
 * a conditional write that fails is reported as one write unit a write (DynamoDB bills it; the
 * error carries no count). Calls that touch only `exclude` (the usage tables: metering's own
 * writes) are left alone.
 *
 * @example
 * instrumentDynamo(new DynamoDBClient({}), consumption, [tables.Usage, tables.UsageDays]);
 */
export function instrumentDynamo(
  client: DynamoDBClient,
  meter: ConsumptionMeter,
  exclude: readonly string[] = [],
): void {
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
        const floor = name === "TransactWriteItemsCommand" ? transactionWriteUnits(input) : 0;
        meter.record(read ? { dynamoReadUnits: units } : { dynamoWriteUnits: Math.max(units, floor) });
        return out;
      } catch (err) {
        if (!read && conditionFailed(err)) meter.record({ dynamoWriteUnits: input.TransactItems?.length ?? 1 });
        throw err;
      }
    },
    { step: "initialize", name: "harnessSConsumedCapacity", override: true },
  );
}

/**
 * A write refused on its condition: a conditional write, or a transaction cancelled by one of its items' conditions.
 */
function conditionFailed(err: unknown): boolean {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | undefined;
  return (
    e?.name === "ConditionalCheckFailedException" ||
    (e?.name === "TransactionCanceledException" &&
      (e.CancellationReasons ?? []).some((r) => r.Code === "ConditionalCheckFailed"))
  );
}

const bytes = (s: unknown) => (typeof s === "string" ? Buffer.byteLength(s) : 0);

/**
 * The SQS requests one call is billed as: each 64 KB chunk of its payload (sent or received) is one, and every call at
 * least one.
 */
export function sqsRequests(
  command: string,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
): number {
  let payload = 0;
  if (command === "SendMessageCommand") payload = bytes(input.MessageBody);
  else if (command === "SendMessageBatchCommand")
    payload = ((input.Entries as { MessageBody?: string }[]) ?? []).reduce((n, e) => n + bytes(e.MessageBody), 0);
  else if (command === "ReceiveMessageCommand")
    payload = ((output?.Messages as { Body?: string }[]) ?? []).reduce((n, m) => n + bytes(m.Body), 0);
  return Math.max(1, Math.ceil(payload / SQS_CHUNK_BYTES));
}

/**
 * Whether a failed attempt was answered by the service (an error status), not lost before any answer (a reset, a
 * refused connection).
 */
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
        meter.record({
          sqsRequests: sqsRequests(String(context.commandName), args.input as Record<string, unknown>, output),
        });
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
