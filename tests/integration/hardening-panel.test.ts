import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VoterPanel, statisticalVoters } from "@harness-s/core/voting";
import { createPool } from "@harness-s/core";
import { votersFromPanel } from "@harness-s/adapters/llm";
import type { ApiDeps } from "../../functions/api/deps.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeSpec } from "../factories.ts";
import { completion, startHostileOpenAi, type HostileReply } from "../hostile-openai.ts";

// Issue 30, items 6 and 8 for the voter panel: an LLM voter's endpoint that misbehaves, and what
// its key is metered for, against the panel as `serve --voters` builds it (votersFromPanel).
type Hostile = Awaited<ReturnType<typeof startHostileOpenAi>>;
const servers: Record<string, Hostile> = {};
/** Each server's next answers, in order; the last one repeats. */
const plans: Record<string, HostileReply[]> = {};
const answer = (name: string) => () => (plans[name]!.length > 1 ? plans[name]!.shift()! : plans[name]![0]!);
const ballot = (ranking: unknown, usage = { prompt_tokens: 100, completion_tokens: 50 }): HostileReply => ({
  json: completion({ content: JSON.stringify({ ranking }), usage }),
});
const candidates = [
  makeSpec({ id: "sib-a", provenance: { direction: "contract" } }),
  makeSpec({ id: "sib-b", provenance: { direction: "recovery" } }),
];

beforeAll(async () => {
  for (const name of ["one", "two"]) servers[name] = await startHostileOpenAi(answer(name));
});
afterAll(async () => Promise.all(Object.values(servers).map((s) => s.close())));

/** The API deciding with two LLM voters (each its own hostile server) and a quorum of 2, no fallback. */
async function serveWith(opts: { quorum?: number; timeoutMs?: number } = {}) {
  const panel = VoterPanel.parse({
    voters: ["one", "two"].map((id) => ({
      kind: "llm",
      id,
      baseURL: servers[id]!.url,
      model: "m",
      timeoutMs: opts.timeoutMs ?? 1_000,
      price: { input: 1e-6, output: 2e-6 },
    })),
    quorum: opts.quorum ?? 2,
  });
  const routing = votersFromPanel(panel, { apiKey: () => "unused", statistical: statisticalVoters });
  const deps: ApiDeps = memoryApiDeps({ voters: routing.voters, panel: routing });
  await seedPool(deps, createPool("p", makeSpec({ id: "h0", provenance: { direction: "base" } }), candidates), {});
  const key = await addKey(deps, "k", ["route"]);
  const api = await startApi(deps);
  const route = () =>
    fetch(`${api.url}/v1/route`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ poolId: "p", task: { id: "t", family: "app" }, failureTags: ["x"], k: 1 }),
    });
  return { deps, route, close: () => api.close() };
}
/** What the hostile servers reported as spent since `from` (their usage bodies, as the voters got them). */
const reportedSince = (from: Record<string, number>) =>
  Object.entries(servers).reduce((sum, [name, s]) => sum + s.requests.slice(from[name]).length * 150, 0);
const marks = () => Object.fromEntries(Object.entries(servers).map(([n, s]) => [n, s.requests.length]));

describe("what a key is metered for when its panel's voters misbehave (item 8)", () => {
  it("a decision that misses its quorum (503) is still metered for every token its voters spent: empty, null, unknown and duplicate answers", async () => {
    plans.one = [
      { json: completion({ content: "", usage: { prompt_tokens: 100, completion_tokens: 50 } }) },
      { json: completion({ content: null, usage: { prompt_tokens: 100, completion_tokens: 50 } }) },
    ];
    plans.two = [ballot(["sib-a", "nope"]), ballot(["sib-a", "sib-a"])];
    const api = await serveWith();
    const from = marks();
    const res = await api.route();
    await api.close();
    expect(res.status).toBe(503);
    expect((await res.json()).error.code).toBe("QUORUM_NOT_MET");
    const spent = reportedSince(from);
    expect(spent).toBe(4 * 150);
    expect(await api.deps.meter.get("k")).toMatchObject({
      requests: 1,
      ballots: 0,
      llmTokens: spent,
      llmCostUsd: expect.closeTo(4 * (100e-6 + 100e-6), 9),
    });
  });

  it("a voter whose first answer was unusable and whose retry timed out is metered for the first", async () => {
    plans.one = [ballot(["sib-a", "sib-b"])];
    plans.two = [
      { json: completion({ content: "no JSON here", usage: { prompt_tokens: 100, completion_tokens: 50 } }) },
      { trickle: { chunk: " ", everyMs: 100 } },
    ];
    const api = await serveWith({ quorum: 1 });
    const res = await api.route();
    await api.close();
    expect(res.status).toBe(200);
    expect((await res.json()).failures.map((f: { kind: string }) => f.kind)).toEqual(["timeout"]);
    expect(await api.deps.meter.get("k")).toMatchObject({ requests: 1, ballots: 1, llmTokens: 150 + 150 });
  });

  it("a voter reporting 2^53−1 tokens is metered at the bound and the request is not lost", async () => {
    plans.one = [ballot(["sib-a", "sib-b"], { prompt_tokens: 2 ** 53 - 1, completion_tokens: 2 ** 53 - 1 })];
    plans.two = [ballot(["sib-b", "sib-a"])];
    const api = await serveWith();
    const res = await api.route();
    await api.close();
    expect(res.status).toBe(200);
    expect(await api.deps.meter.get("k")).toMatchObject({ requests: 1, ballots: 2, llmTokens: 4_000_000 + 150 });
  });
});

describe("a voter endpoint that streams an endless body (item 6)", () => {
  it("abstains at its deadline and the download stops there", async () => {
    plans.one = [ballot(["sib-a", "sib-b"])];
    plans.two = [{ endless: true }];
    const api = await serveWith({ quorum: 1, timeoutMs: 1_000 });
    const started = Date.now();
    const res = await api.route();
    const took = Date.now() - started;
    await new Promise((r) => setTimeout(r, 500));
    await api.close();
    expect(res.status).toBe(200);
    const endless = servers.two!.sent.at(-1)!;
    expect(endless.closedAfterMs).toBeDefined();
    expect(endless.closedAfterMs!).toBeLessThan(took + 500);
    expect(endless.written).toBeLessThan(8 << 20);
  });
});
