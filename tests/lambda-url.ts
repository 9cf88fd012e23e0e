import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";

// A Lambda Function URL on loopback, in RESPONSE_STREAM mode, as the Node.js runtime runs a
// handler made with `awslambda.streamifyResponse`: each HTTP request becomes a payload-2.0 event;
// the handler writes the metadata prelude (JSON, then 8 NUL bytes: the runtime's
// application/vnd.awslambda.http-integration-response framing) and then the body, which is
// relayed to the caller as it is written.

const DELIMITER = Buffer.alloc(8);

type StreamingHandler = (event: unknown, responseStream: Writable, context: unknown) => Promise<void>;

/**
 * The runtime's `awslambda` global (only what `hono/aws-lambda`'s streamHandle uses), installed once before a handler
 * is made.
 */
export function installLambdaStreamingRuntime(): void {
  const g = globalThis as { awslambda?: unknown };
  if (g.awslambda) return;
  g.awslambda = {
    streamifyResponse: (handler: StreamingHandler) => Object.assign(handler, { streaming: true }),
    HttpResponseStream: {
      from(stream: Writable, prelude: Record<string, unknown>): Writable {
        stream.write(Buffer.concat([Buffer.from(JSON.stringify(prelude)), DELIMITER]));
        return stream;
      },
    },
  };
}

/** A response stream that reads the prelude, then relays the body to `res` chunk by chunk. */
function responseStreamTo(res: ServerResponse): Writable {
  let head: Buffer | undefined = Buffer.alloc(0);
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      if (head === undefined) return res.write(chunk) ? done() : res.once("drain", done);
      head = Buffer.concat([head, Buffer.from(chunk)]);
      const at = head.indexOf(DELIMITER);
      if (at < 0) return done();
      const prelude = JSON.parse(head.subarray(0, at).toString()) as {
        statusCode?: number;
        headers?: Record<string, string>;
        cookies?: string[];
      };
      res.writeHead(prelude.statusCode ?? 200, {
        ...prelude.headers,
        ...(prelude.cookies?.length ? { "set-cookie": prelude.cookies } : {}),
      });
      const rest = head.subarray(at + DELIMITER.length);
      head = undefined;
      if (rest.length) res.write(rest);
      done();
    },
    final(done) {
      if (head !== undefined) res.writeHead(200);
      res.end();
      done();
    },
  });
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function eventOf(req: IncomingMessage, host: string): Promise<unknown> {
  const body = await bodyOf(req);
  const url = new URL(req.url ?? "/", "http://x");
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(",") : v;
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    requestContext: {
      accountId: "anonymous",
      domainName: host,
      http: {
        method: req.method ?? "GET",
        path: url.pathname,
        protocol: "HTTP/1.1",
        sourceIp: req.socket.remoteAddress ?? "127.0.0.1",
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      timeEpoch: Date.now(),
    },
    ...(body.length ? { body: body.toString("base64"), isBase64Encoded: true } : { isBase64Encoded: false }),
  };
}

/** Listens on a free loopback port; `close` drops open connections too. */
async function onLoopback(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Serves a streaming handler as a Function URL on a free loopback port.
 *
 * @example
 * installLambdaStreamingRuntime();
 * const fn = await serveFunctionUrl(streamHandle(createApp(deps)));
 */
export async function serveFunctionUrl(handler: unknown): Promise<{ url: string; close: () => Promise<void> }> {
  const run = handler as StreamingHandler;
  const server = createServer(async (req, res) => {
    try {
      await run(await eventOf(req, req.headers.host ?? "localhost"), responseStreamTo(res), {
        awsRequestId: randomUUID(),
      });
    } catch (err) {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    }
  });
  return onLoopback(server);
}

/**
 * One URL in front of several: request i goes to target i mod n (turns of one episode alternate between handler
 * instances).
 */
export async function roundRobin(
  targets: () => readonly string[],
): Promise<{ url: string; close: () => Promise<void> }> {
  let next = 0;
  const server = createServer(async (req, res) => {
    const list = targets();
    const target = list[next++ % list.length]!;
    const body = await bodyOf(req);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length"),
    ) as Record<string, string>;
    const answer = await fetch(`${target}${req.url}`, {
      method: req.method ?? "GET",
      headers,
      ...(body.length ? { body: new Uint8Array(body) } : {}),
    });
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (answer.body) for await (const chunk of answer.body) res.write(chunk);
    res.end();
  });
  return onLoopback(server);
}
