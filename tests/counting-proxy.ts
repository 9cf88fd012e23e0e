import { createServer, request } from "node:http";

/** What passed through a proxy: one entry per request, with its body and the response's. */
export interface Exchange {
  target: string;
  request: string;
  status: number;
  response: string;
}

/**
 * A loopback HTTP proxy in front of `target` that keeps every request and response it forwards:
 * what the server behind it received and answered, seen where no client's own bookkeeping can reach.
 */
export async function countingProxy(
  target: string,
): Promise<{ url: string; exchanges: Exchange[]; stop: () => Promise<void> }> {
  const to = new URL(target);
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    const sent: Buffer[] = [];
    req.on("data", (b: Buffer) => sent.push(b));
    req.on("end", () => {
      const body = Buffer.concat(sent);
      const up = request(
        { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
        (reply) => {
          const got: Buffer[] = [];
          reply.on("data", (b: Buffer) => got.push(b));
          reply.on("end", () => {
            const answer = Buffer.concat(got);
            exchanges.push({
              target: String(req.headers["x-amz-target"] ?? ""),
              request: body.toString("utf8"),
              status: reply.statusCode ?? 0,
              response: answer.toString("utf8"),
            });
            res.writeHead(reply.statusCode ?? 502, reply.headers);
            res.end(answer);
          });
        },
      );
      up.on("error", () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A wire attribute value's bytes as DynamoDB counts them at least (a number 1; binary decoded from base64). */
function wireBytes(v: Record<string, unknown>): number {
  const [type, inner] = Object.entries(v)[0] ?? [];
  if (type === "S") return Buffer.byteLength(String(inner));
  if (type === "B") return Buffer.from(String(inner), "base64").length;
  if (type === "M") return wireItemBytes(inner as Record<string, Record<string, unknown>>);
  if (type === "L") return (inner as Record<string, unknown>[]).reduce((n, e) => n + wireBytes(e), 0);
  if (type === "SS") return (inner as string[]).reduce((n, e) => n + Buffer.byteLength(e), 0);
  if (type === "BS") return (inner as string[]).reduce((n, e) => n + Buffer.from(e, "base64").length, 0);
  if (type === "NS") return (inner as string[]).length;
  return 1;
}
const wireItemBytes = (item: Record<string, Record<string, unknown>>): number =>
  Object.entries(item).reduce((n, [name, v]) => n + Buffer.byteLength(name) + wireBytes(v), 0);

/**
 * A transaction's least write units in the cloud, from its wire request: twice each item's (a put's by its size, 1 KB a
 * unit; any other 1).
 */
function transactionFloor(req: {
  TransactItems?: Record<string, { Item?: Record<string, Record<string, unknown>> }>[];
}): number {
  return (req.TransactItems ?? []).reduce(
    (n, op) => n + 2 * (op.Put?.Item ? Math.max(1, Math.ceil(wireItemBytes(op.Put.Item) / 1024)) : 1),
    0,
  );
}

/**
 * DynamoDB capacity units in the responses that passed, read units and write units apart, by the
 * service's own rules for what the reply does not say: a failed conditional write is one write
 * unit (a transaction cancelled by a condition, one an item), and a transaction at least what
 * the cloud bills (DynamoDB Local reports one item's). Requests that touch only `exclude` tables
 * are left out.
 */
export function dynamoCapacity(
  exchanges: readonly Exchange[],
  exclude: readonly string[],
): { read: number; write: number } {
  const reads = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]);
  const out = { read: 0, write: 0 };
  for (const x of exchanges) {
    const op = x.target.split(".")[1] ?? "";
    const req = JSON.parse(x.request || "{}") as {
      TableName?: string;
      RequestItems?: object;
      TransactItems?: Record<string, { TableName?: string }>[];
    };
    const tables = req.TableName
      ? [req.TableName]
      : req.RequestItems
        ? Object.keys(req.RequestItems)
        : (req.TransactItems ?? []).flatMap((i) => Object.values(i).map((o) => o.TableName ?? ""));
    if (tables.length === 0 || tables.every((t) => exclude.includes(t))) continue;
    const res = JSON.parse(x.response || "{}") as {
      ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[];
      __type?: string;
    };
    const entries = Array.isArray(res.ConsumedCapacity)
      ? res.ConsumedCapacity
      : res.ConsumedCapacity
        ? [res.ConsumedCapacity]
        : [];
    let units = entries.reduce((n, e) => n + (e.CapacityUnits ?? 0), 0);
    if (op === "TransactWriteItems" && x.status === 200)
      units = Math.max(units, transactionFloor(req as Parameters<typeof transactionFloor>[0]));
    if (x.status === 400 && res.__type?.endsWith("ConditionalCheckFailedException")) units = 1;
    if (
      x.status === 400 &&
      res.__type?.endsWith("TransactionCanceledException") &&
      /ConditionalCheckFailed/.test(x.response)
    )
      units = req.TransactItems?.length ?? 1;
    if (reads.has(op)) out.read += units;
    else out.write += units;
  }
  return out;
}

/**
 * SQS requests as billed, from what the queue server saw: each request at least one, and each
 * 64 KB chunk of the payload it carried (bodies sent, or received) one.
 */
export function sqsBilled(exchanges: readonly Exchange[]): number {
  const bytes = (s: unknown) => (typeof s === "string" ? Buffer.byteLength(s) : 0);
  return exchanges.reduce((n, x) => {
    const op = x.target.split(".")[1] ?? "";
    const req = JSON.parse(x.request || "{}") as { MessageBody?: string; Entries?: { MessageBody?: string }[] };
    const res = x.status === 200 ? (JSON.parse(x.response || "{}") as { Messages?: { Body?: string }[] }) : {};
    const payload =
      op === "SendMessage"
        ? bytes(req.MessageBody)
        : op === "SendMessageBatch"
          ? (req.Entries ?? []).reduce((m, e) => m + bytes(e.MessageBody), 0)
          : op === "ReceiveMessage"
            ? (res.Messages ?? []).reduce((m, e) => m + bytes(e.Body), 0)
            : 0;
    return n + Math.max(1, Math.ceil(payload / (64 * 1024)));
  }, 0);
}
