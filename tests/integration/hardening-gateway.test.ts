import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayEpisodes } from "@harness-s/core/gateway";
import { createPool } from "@harness-s/core";
import { zeroUsage } from "@harness-s/core/billing";
import type { ApiDeps } from "../../functions/api/deps.ts";
import { gatewaySettings } from "../../functions/api/gateway-setup.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeProfile, makeSpec } from "../factories.ts";
import { completion, startHostileOpenAi, type HostileReply } from "../hostile-openai.ts";

// Issue 30, the gateway as a hostile caller and a hostile model endpoint see it: episodes and
// keys (items 1–4) and a misbehaving upstream (5–8), against the gateway as `serve` builds it
// (gatewaySettings: the bounded client, the limits) over real HTTP.
let behave: (body: Record<string, unknown>) => HostileReply = () => ({
  json: completion({ call: { name: "lookup", arguments: "{}" } }),
});
let upstream: Awaited<ReturnType<typeof startHostileOpenAi>>;
let api: Awaited<ReturnType<typeof startApi>>;
let deps: ApiDeps;
let keyA: string;
let keyB: string;

const tools = [
  { type: "function", function: { name: "lookup", description: "Look up", parameters: { type: "object" } } },
  { type: "function", function: { name: "submit", description: "Commit", parameters: { type: "object" } } },
];

beforeAll(async () => {
  upstream = await startHostileOpenAi((body) => behave(body));
  const gateway = await gatewaySettings({ upstream: upstream.url, pool: "gw", env: "generic", timeoutMs: 1_500 });
  // Small caps, so a test can fill them: 4 open episodes per key, 10 in all.
  deps = memoryApiDeps({
    gateway: {
      ...gateway,
      episodes: new GatewayEpisodes(new MemoryGatewayEpisodeStore({ maxEpisodes: 10, maxEpisodesPerKey: 4 }), {
        idleMs: 60_000,
      }),
    },
  });
  const h0 = makeSpec({ id: "h0", provenance: { direction: "base" } });
  await seedPool(deps, createPool("gw", h0, [makeSpec({ id: "sib", provenance: { direction: "recovery" } })]), {
    h0: makeProfile("h0", { byFamily: { default: { attempts: 10, successes: 9 } } }),
  });
  keyA = await addKey(deps, "k-a", ["gateway"]);
  keyB = await addKey(deps, "k-b", ["gateway"]);
  api = await startApi(deps);
});
afterAll(async () => {
  await api?.close();
  await upstream?.close();
});

type Msg = { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string };
const chat = (
  secret: string,
  messages: Msg[],
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
) =>
  fetch(`${api.url}/v1/gateway/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${secret}`, ...headers },
    body: JSON.stringify({ model: "m", messages, tools, ...extra }),
  });
const episodeOf = (secret: string, id: string) =>
  fetch(`${api.url}/v1/gateway/episodes/${id}`, { headers: { authorization: `Bearer ${secret}` } });
/** The agent's next messages: our reply echoed as its assistant message, then a tool output. */
const next = async (messages: Msg[], res: Response, output: string): Promise<Msg[]> => {
  const reply = (await res.json()).choices[0].message;
  return [
    ...messages,
    { role: "assistant", content: reply.content, tool_calls: reply.tool_calls },
    { role: "tool", tool_call_id: "call_lookup", content: output },
  ];
};

describe("gateway episodes belong to the key that opened them", () => {
  it("a name another key used first is still this key's own, and neither learns of the other's (item 1)", async () => {
    const task = [{ role: "user", content: "task shared-x" }];
    const b = await chat(keyB, task, { "x-harness-s-episode": "shared-x" });
    expect(b.status).toBe(200);
    const a = await chat(keyA, [{ role: "user", content: "A's own task" }], { "x-harness-s-episode": "shared-x" });
    expect(a.status).toBe(200);
    expect(a.headers.get("x-harness-s-episode")).toBe("shared-x");
    const aTurns = await next([{ role: "user", content: "A's own task" }], a, "fine");
    expect((await chat(keyA, aTurns, { "x-harness-s-episode": "shared-x" })).status).toBe(200);
    // Each key reads its own episode under the name; B's reads tell it nothing of A's.
    expect((await (await episodeOf(keyA, "shared-x")).json()).turns).toHaveLength(2);
    expect((await (await episodeOf(keyB, "shared-x")).json()).turns).toHaveLength(1);
    // Variant: a name only A used is a 404 for B, the same as a name nobody used.
    await chat(keyA, [{ role: "user", content: "A only" }], { "x-harness-s-episode": "a-only" });
    expect((await episodeOf(keyB, "a-only")).status).toBe(404);
    expect((await episodeOf(keyB, "nobody")).status).toBe(404);
  });

  it("one key opening many episodes evicts its own oldest, never another key's running one (item 2)", async () => {
    const mine = [{ role: "user", content: "A's long task" }];
    const started = await chat(keyA, mine, { "x-harness-s-episode": "a-long" });
    const turns = await next(mine, started, "fine");
    for (let i = 0; i < 25; i++)
      expect((await chat(keyB, [{ role: "user", content: `B task ${i}` }])).status).toBe(200);
    expect((await episodeOf(keyA, "a-long")).status).toBe(200);
    expect((await chat(keyA, turns, { "x-harness-s-episode": "a-long" })).status).toBe(200);
    // Variant: the total cap reached by two other keys together still takes from the largest holder.
    const keyC = await addKey(deps, "k-c", ["gateway"]);
    for (let i = 0; i < 8; i++) await chat(keyC, [{ role: "user", content: `C task ${i}` }]);
    expect((await episodeOf(keyA, "a-long")).status).toBe(200);
  });
});

describe("a request extends its episode's conversation exactly, or is refused (item 3)", () => {
  it("two agents of one key with the same opening and no header get two episodes; the model sees each opening", async () => {
    const opening = [
      { role: "system", content: "S" },
      { role: "user", content: "same task" },
    ];
    const before = upstream.requests.length;
    const first = await chat(keyA, opening);
    const second = await chat(keyA, opening);
    expect(first.headers.get("x-harness-s-episode")).not.toBe(second.headers.get("x-harness-s-episode"));
    expect(upstream.requests.slice(before).map((r) => (r.messages as Msg[]).at(-1))).toEqual([
      { role: "user", content: "same task" },
      { role: "user", content: "same task" },
    ]);
    // Both replies are the same call: their continuations cannot be told apart, so the gateway asks for the header.
    const t1 = await next(opening, first, "one");
    const t2 = await next(opening, second, "two");
    expect((await chat(keyA, t1)).status).toBe(409);
    expect((await chat(keyA, t2, { "x-harness-s-episode": second.headers.get("x-harness-s-episode")! })).status).toBe(
      200,
    );
  });

  it("a history shortened or edited after turn 2 is a 409, and its text never reaches the model as an empty tool output", async () => {
    const h = { "x-harness-s-episode": "edited" };
    const opening = [{ role: "user", content: "edit me" }];
    const r1 = await chat(keyA, opening, h);
    const t2 = await next(opening, r1, "out 1");
    const r2 = await chat(keyA, t2, h);
    const t3 = await next(t2, r2, "out 2");
    expect((await chat(keyA, t3, h)).status).toBe(200);
    const before = upstream.requests.length;
    const shortened = [...t2.slice(0, 2), { role: "user", content: "NEW QUESTION" }];
    expect((await chat(keyA, shortened, h)).status).toBe(409);
    const edited = t3.map((m, i) => (i === 2 ? { ...m, content: "out 1 (edited)" } : m));
    expect((await chat(keyA, [...edited, ...(await next([], await chat(keyA, t3, h), "x")).slice(-2)], h)).status).toBe(
      409,
    );
    // Variant: an echo of a reply the gateway never gave.
    const forged = [
      ...t3.slice(0, -2),
      { role: "assistant", content: "I decided myself", tool_calls: [] },
      { role: "tool", content: "y", tool_call_id: "c" },
    ];
    expect((await chat(keyA, forged, h)).status).toBe(409);
    expect(upstream.requests.slice(before).every((r) => (r.messages as Msg[]).every((m) => m.content !== ""))).toBe(
      true,
    );
  });
});

describe("the gateway's body limit (item 4, and item 9 on its path)", () => {
  it("takes a conversation of ~260 KB, its own default limit (4 MiB), without the API's 64 KiB", async () => {
    const res = await chat(keyA, [{ role: "user", content: `big ${"x".repeat(260_000)}` }]);
    expect(res.status).toBe(200);
    // Variant: a conversation grown to 3 MB over many turns is still read; past the gateway's own limit is a 413.
    const long = [
      { role: "user", content: "long" },
      ...Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? "tool" : "assistant", content: "z".repeat(100_000) })),
    ];
    expect((await chat(keyA, long)).status).not.toBe(413);
    expect((await chat(keyA, [{ role: "user", content: "y".repeat(4_300_000) }])).status).toBe(413);
  });
});

describe("a misbehaving model endpoint (items 5–8)", () => {
  const fresh = (name: string) =>
    chat(keyA, [{ role: "user", content: `task ${name}` }], { "x-harness-s-episode": name });

  it("a reply trickled after its headers is given up at the deadline (a 502), and the episode is free again (item 5)", async () => {
    behave = () => ({ trickle: { chunk: " ", everyMs: 200 } });
    const started = Date.now();
    const res = await fresh("trickle");
    expect(res.status).toBe(502);
    expect(Date.now() - started).toBeLessThan(10_000);
    await new Promise((r) => setTimeout(r, 300));
    // Each attempt (the SDK's one retry included) was hung up on at the 1.5 s deadline.
    const trickled = upstream.sent.slice(-2);
    expect(trickled.map((s) => s.closedAfterMs! < 3_000)).toEqual([true, true]);
    behave = () => ({ json: completion({ call: { name: "lookup", arguments: "{}" } }) });
    expect((await fresh("trickle")).status).toBe(200);
  });

  it("an endless or oversized reply is cut off as it arrives and the connection dropped (item 6)", async () => {
    behave = () => ({ endless: true });
    expect((await fresh("endless")).status).toBe(502);
    await new Promise((r) => setTimeout(r, 300));
    const endless = upstream.sent.at(-1)!;
    expect(endless.closedAfterMs).toBeDefined();
    expect(endless.written).toBeLessThan(24 << 20);
    // Variant: one large reply with a declared length (60 MB) is refused without reading it.
    behave = () => ({ raw: JSON.stringify(completion({ content: "z".repeat(60_000_000) })), status: 200 });
    expect((await fresh("huge")).status).toBe(502);
  });

  it("the endpoint's error text never reaches the agent: a stable code and a generic message (item 7)", async () => {
    behave = () => ({
      json: { error: { message: "Incorrect API key provided: Bearer none (org org-secret-123)" } },
      status: 401,
    });
    const res = await fresh("secret");
    const text = await res.text();
    expect(res.status).toBe(502);
    expect(JSON.parse(text).error.code).toBe("UPSTREAM_FAILED");
    expect(text).not.toMatch(/org-secret|Incorrect API key|Bearer/);
    // Variant: an HTML page where JSON was expected.
    behave = () => ({ raw: "<html><body>bad gateway</body></html>", status: 200, type: "text/html" });
    const html = await (await fresh("html")).text();
    expect(html).not.toMatch(/Unexpected token|<html|SyntaxError/);
  });

  it("a parameter the agent got wrong is the agent's 400: checked here, or refused by the endpoint (item 7)", async () => {
    behave = () => ({ json: completion({ call: { name: "lookup", arguments: "{}" } }) });
    const before = upstream.requests.length;
    const bad = await chat(keyA, [{ role: "user", content: "bad temp" }], {}, { temperature: 5 });
    expect(bad.status).toBe(400);
    expect(upstream.requests.length).toBe(before);
    behave = () => ({ json: { error: { message: "Unsupported value: 'logit_bias' does not support…" } }, status: 400 });
    const refused = await chat(
      keyA,
      [{ role: "user", content: "bad param" }],
      { "x-harness-s-episode": "refused" },
      { logit_bias: { "1": 100 } },
    );
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.code).toBe("UPSTREAM_REJECTED");
  });

  it("absurd usage counts are bounded and the request is metered, every turn the endpoint answered (item 8)", async () => {
    const keyM = await addKey(deps, "k-meter", ["gateway"]);
    behave = () => ({
      json: completion({
        call: { name: "lookup", arguments: "{}" },
        usage: { prompt_tokens: 2 ** 53 - 1, completion_tokens: 5 },
      }),
    });
    const res = await chat(keyM, [{ role: "user", content: "usage" }]);
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    const used = await deps.meter.get("k-meter");
    expect(used).toMatchObject({ requests: 1, gatewayTurns: 1, gatewayTokens: 2_000_005 });
    // Variant: a negative and a textual count are not counts (metered as 0, the turn still answered).
    behave = () => ({
      json: completion({
        call: { name: "lookup", arguments: "{}" },
        usage: { prompt_tokens: -7, completion_tokens: "9" },
      }),
    });
    expect((await chat(keyM, [{ role: "user", content: "usage 2" }])).status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expect(await deps.meter.get("k-meter")).toEqual({
      ...zeroUsage,
      requests: 2,
      ballots: 6,
      gatewayTurns: 2,
      gatewayTokens: 2_000_005,
      computeMs: expect.any(Number),
    });
  });
});
