import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "@harness-s/core";
import { PolicyWorkerRefusedError } from "@harness-s/adapters";
import { TokenPolicyClient } from "@harness-s/adapters/policy";

// A stand-in worker on loopback: answers each sample after 20 ms and counts how many it holds at
// once; a few paths answer with the worker's own refusals.
let server: Server;
let url = "";
let holding = 0;
let mostHeld = 0;
const turn = (deviceMs?: number) =>
  JSON.stringify({
    policy_version: 0,
    prompt_ids: [1],
    completion: { ids: [2], logprobs: [-0.5], text: "x", finish_reason: "stop", content: "x" },
    ...(deviceMs === undefined ? {} : { usage: { device_ms: deviceMs } }),
  });
const SAMPLE = turn(12.5);
const REFUSALS: Record<string, [number, string]> = {
  busy: [409, "UPDATE_IN_PROGRESS"],
  full: [429, "CAPACITY_EXCEEDED"],
  late: [503, "SAMPLE_TIMEOUT"],
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const refusal = Object.entries(REFUSALS).find(([id]) => req.url?.includes(`/policies/${id}/`))?.[1];
    req.resume();
    if (req.url?.includes("/policies/echo-at-the-cut/")) {
      // The secret straddles the point an error's text is cut at (200 characters of a text body).
      res.writeHead(400, { "content-type": "text/plain" }).end(`${"x".repeat(185)}${req.headers.authorization} …`);
      return;
    }
    if (req.url?.includes("/policies/hostile/")) {
      res.writeHead(200, { "content-type": "application/json" }).end(turn(1e12));
      return;
    }
    if (refusal) {
      res
        .writeHead(refusal[0], { "content-type": "application/json" })
        .end(JSON.stringify({ error: { code: refusal[1], message: "no" } }));
      return;
    }
    holding++;
    mostHeld = Math.max(mostHeld, holding);
    setTimeout(() => {
      holding--;
      res.writeHead(200, { "content-type": "application/json" }).end(SAMPLE);
    }, 20);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const sample = (i: number) => ({ episode_id: `e${i}`, messages: [{ role: "user" as const, content: "hi" }] });

describe("TokenPolicyClient against a worker on loopback", () => {
  it("holds samples beyond maxInFlight back at the client, and every one still completes", async () => {
    const client = new TokenPolicyClient(url, { clock: systemClock, maxInFlight: 3 });
    mostHeld = 0;
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => client.sample("p", sample(i))));
    expect(answers).toHaveLength(12);
    expect(mostHeld).toBe(3);
  });

  it("turns the worker's own refusals into domain errors with their codes", async () => {
    const client = new TokenPolicyClient(url, { clock: systemClock });
    const codes = await Promise.all(
      Object.keys(REFUSALS).map((id) => client.sample(id, sample(0)).catch((err: unknown) => err)),
    );
    expect(codes.every((e) => e instanceof PolicyWorkerRefusedError)).toBe(true);
    expect(codes.map((e) => [(e as PolicyWorkerRefusedError).code, (e as PolicyWorkerRefusedError).status])).toEqual([
      ["POLICY_UPDATE_IN_PROGRESS", 409],
      ["POLICY_CAPACITY_EXCEEDED", 429],
      ["POLICY_SAMPLE_TIMEOUT", 503],
    ]);
  });

  it("reports each sample's device time to the meter, and refuses a device time no sample can take", async () => {
    const seconds: number[] = [];
    const client = new TokenPolicyClient(url, { clock: systemClock, onDeviceSeconds: (s) => seconds.push(s) });
    await Promise.all([client.sample("p", sample(1)), client.sample("p", sample(2))]);
    expect(seconds).toEqual([0.0125, 0.0125]);
    await expect(client.sample("hostile", sample(3))).rejects.toThrow(/device_ms/);
    expect(seconds).toHaveLength(2);
  });

  it("masks its secret in an echoed error before cutting the text to size: not even the secret's first characters remain (issue 52, item 8)", async () => {
    const client = new TokenPolicyClient(url, { clock: systemClock, token: "tok_a1b2c3d4e5f6g7h8" });
    const err = (await client.sample("echo-at-the-cut", sample(4)).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain("HTTP 400");
    expect(err.message).not.toMatch(/tok_a1/);
  });
});
