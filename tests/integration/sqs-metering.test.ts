import { createServer, request, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateQueueCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startFauxqs, type FauxqsServer } from "fauxqs";
import { ConsumptionMeter, instrumentSqs } from "@harness-s/adapters/metering";
import { localCredentials } from "@harness-s/adapters/local";

/**
 * A loopback proxy to the queue server that resets the connection of the requests it is told to drop, before any
 * answer.
 */
async function droppingProxy(target: string) {
  const to = new URL(target);
  const state = { drop: 0, answered: 0, dropped: 0 };
  const server: Server = createServer((req, res) => {
    const body: Buffer[] = [];
    req.on("data", (b: Buffer) => body.push(b));
    req.on("end", () => {
      if (state.drop > 0) {
        state.drop--;
        state.dropped++;
        return req.socket.destroy();
      }
      const up = request(
        { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
        (reply) => {
          state.answered++;
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        },
      );
      up.end(Buffer.concat(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe("SQS metering counts what reached the queue service", () => {
  let fauxqs: FauxqsServer;
  let proxy: Awaited<ReturnType<typeof droppingProxy>>;

  beforeAll(async () => {
    fauxqs = await startFauxqs({ port: 0, host: "127.0.0.1", logger: false });
    proxy = await droppingProxy(`http://127.0.0.1:${fauxqs.port}`);
  });
  afterAll(async () => {
    await proxy?.stop();
    await fauxqs?.stop();
  });

  it("bills a retried attempt whose connection reset before any answer as nothing, and each answered attempt (an error status too) as its chunks", async () => {
    // Prepare
    const meter = new ConsumptionMeter();
    const sqs = new SQSClient({
      endpoint: proxy.url,
      region: "us-east-1",
      credentials: localCredentials,
      maxAttempts: 3,
    });
    instrumentSqs(sqs, meter);
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "metering-resets" }));
    // Act
    proxy.state.drop = 1;
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "x".repeat(70 * 1024) }));
    const refused = await sqs
      .send(new SendMessageCommand({ QueueUrl: `${QueueUrl}-missing`, MessageBody: "y" }))
      .catch((e: Error) => e);
    sqs.destroy();
    // Assess
    expect(proxy.state.dropped).toBe(1);
    expect(refused).toBeInstanceOf(Error);
    expect(proxy.state.answered).toBe(3); // CreateQueue, the send's second attempt, the refused send
    expect(meter.total.sqsRequests).toBe(1 + 2 + 1); // CreateQueue, the 70 KB send as two chunks once, and the refusal the service answered
  });
});
