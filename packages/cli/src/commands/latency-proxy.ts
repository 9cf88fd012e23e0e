import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback HTTP proxy in front of `target` (DynamoDB Local, fauxqs) that holds each answer the set delay before
 * passing it on: what a store or queue that much further away costs a path, seen from outside every process that uses
 * it (a long poll waiting when a message arrives is slowed too: it is the answer that is held). It counts the requests
 * it forwarded.
 */
export async function startLatencyProxy(target: string) {
  const to = new URL(target);
  let delay = 0;
  let forwarded = 0;
  const server = createServer((req, res) => {
    const sent: Buffer[] = [];
    req.on("data", (b: Buffer) => sent.push(b));
    req.on("end", () => {
      forwarded++;
      const up = request(
        { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
        (reply) => {
          const got: Buffer[] = [];
          reply.on("data", (b: Buffer) => got.push(b));
          reply.on("end", () => {
            const answer = () => {
              res.writeHead(reply.statusCode ?? 502, reply.headers);
              res.end(Buffer.concat(got));
            };
            if (delay > 0) setTimeout(answer, delay);
            else answer();
          });
        },
      );
      up.on("error", () => res.destroy());
      up.end(Buffer.concat(sent));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Holds each request this long from now on. */
    setDelay: (ms: number) => {
      delay = ms;
    },
    forwarded: () => forwarded,
    stop: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
