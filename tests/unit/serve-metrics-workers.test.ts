import { type Server, createServer } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { SQSClient } from "@aws-sdk/client-sqs";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { ServeMetrics } from "../../functions/local/metrics.ts";

// Issue 58, item 4: serve's /metrics carries each served model's policy worker's tokens sampled
// (read from its /healthz at each scrape; their rate is the worker's tokens/s) and whether it answered.
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A stand-in worker's /healthz on loopback answering what `reply()` gives at each read. */
async function worker(reply: () => unknown): Promise<string> {
  const server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply())),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const noQueues = { send: async () => ({}) } as unknown as SQSClient;

async function scrape(metrics: ServeMetrics) {
  const families = parsePrometheusTextFormat(await metrics.exposition()) as {
    name: string;
    metrics: { value: string; labels?: Record<string, string> }[];
  }[];
  const value = (name: string, model: string) =>
    Number(families.find((f) => f.name === name)?.metrics.find((m) => m.labels?.model === model)?.value);
  return {
    tokens: (model: string) => value("harness_s_policy_tokens_sampled_total", model),
    up: (model: string) => value("harness_s_policy_worker_up", model),
  };
}

describe("serve's metrics: the policy workers' tokens sampled", () => {
  it("moves by what each worker drew between scrapes, counts a restarted worker from zero, and marks a worker that does not answer as down", async () => {
    let drawn = 120;
    const a = await worker(() => ({ ok: true, sampler: { steps: 9, tokens: drawn } }));
    const hostile = await worker(() => ({ sampler: { tokens: -5 } }));
    const metrics = new ServeMetrics(
      noQueues,
      [],
      [
        { name: "a", url: a },
        { name: "b", url: hostile },
        { name: "c", url: "http://127.0.0.1:1" },
      ],
    );
    const first = await scrape(metrics);
    expect([first.tokens("a"), first.up("a"), first.up("b"), first.up("c")]).toEqual([120, 1, 0, 0]);
    drawn = 200;
    expect((await scrape(metrics)).tokens("a")).toBe(200);
    drawn = 30; // the worker restarted: its own count began again
    expect((await scrape(metrics)).tokens("a")).toBe(230);
  });
});
