// What a key is metered for against what its model endpoint or voters reported spending, for each
// way they misbehave: the gateway as `serve` builds it (gatewaySettings) and the panel as
// `serve --voters` builds it (votersFromPanel), over real HTTP, each endpoint scripted on loopback.
// "Spent" is what the endpoint's replies reported in full; a reply cut off or never finished
// reported nothing, so what the provider bills for it is unknown here (said so in the table).
// Run: node --import tsx scripts/hostile-metering.ts
import { GatewayEpisodes } from "@harness-s/core/gateway";
import { VoterPanel, statisticalVoters } from "@harness-s/core/voting";
import { createPool } from "@harness-s/core";
import type { Usage } from "@harness-s/core/billing";
import { votersFromPanel } from "@harness-s/adapters/llm";
import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import { gatewaySettings } from "../functions/api/gateway-setup.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../tests/api-factory.ts";
import { makeSpec } from "../tests/factories.ts";
import { completion, startHostileOpenAi, type HostileReply } from "../tests/hostile-openai.ts";

const usage = (p: number, c: number) => ({ prompt_tokens: p, completion_tokens: c });
const call = (u: unknown): HostileReply => ({
  json: completion({ call: { name: "lookup", arguments: "{}" }, usage: u }),
});
const ballot = (ranking: unknown, u: unknown = usage(100, 50)): HostileReply => ({
  json: completion({ content: JSON.stringify({ ranking }), usage: u }),
});
const reportedTokens = (r: HostileReply) => {
  if (!("json" in r)) return undefined;
  const u = (r.json as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  return u ? `${String(u.prompt_tokens)} + ${String(u.completion_tokens)}` : "none";
};

let plan: Record<string, HostileReply[]> = {};
const next = (name: string) => () => (plan[name]!.length > 1 ? plan[name]!.shift()! : plan[name]![0]!);
const upstream = await startHostileOpenAi(next("upstream"));
const voterA = await startHostileOpenAi(next("a"));
const voterB = await startHostileOpenAi(next("b"));

const candidates = [
  makeSpec({ id: "sib-a", provenance: { direction: "contract" } }),
  makeSpec({ id: "sib-b", provenance: { direction: "recovery" } }),
];
const gateway = await gatewaySettings({ upstream: upstream.url, pool: "p", env: "generic", timeoutMs: 2_000 });
const panel = VoterPanel.parse({
  voters: [voterA, voterB].map((s, i) => ({ kind: "llm", id: `v${i}`, baseURL: s.url, model: "m", timeoutMs: 1_500 })),
  quorum: 2,
});
const routing = votersFromPanel(panel, { apiKey: () => "unused", statistical: statisticalVoters });
const deps = memoryApiDeps({
  voters: routing.voters,
  panel: routing,
  gateway: {
    ...gateway,
    episodes: new GatewayEpisodes(new MemoryGatewayEpisodeStore({ maxEpisodes: 1000, maxEpisodesPerKey: 1000 }), {
      idleMs: 60_000,
    }),
  },
});
await seedPool(deps, createPool("p", makeSpec({ id: "h0", provenance: { direction: "base" } }), candidates), {});
const api = await startApi(deps);

const rows: string[] = [];
let n = 0;
async function measure(
  kind: "upstream" | "voters",
  label: string,
  replies: Record<string, HostileReply[]>,
  spent: string,
) {
  // The endpoints this row does not script answer well (the gateway's first request routes with the panel too).
  plan = structuredClone({
    upstream: [call(usage(10, 5))],
    a: [ballot(["sib-a", "sib-b"])],
    b: [ballot(["sib-b", "sib-a"])],
    ...replies,
  });
  const keyId = `k${++n}`;
  const secret = await addKey(deps, keyId, ["gateway", "route"]);
  const headers = { "content-type": "application/json", authorization: `Bearer ${secret}` };
  const res =
    kind === "upstream"
      ? await fetch(`${api.url}/v1/gateway/chat/completions`, {
          method: "POST",
          headers,
          body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `task ${n}` }] }),
        })
      : await fetch(`${api.url}/v1/route`, {
          method: "POST",
          headers,
          body: JSON.stringify({ poolId: "p", task: { id: "t", family: "app" }, failureTags: ["x"], k: 1 }),
        });
  await res.arrayBuffer();
  await new Promise((r) => setTimeout(r, 100));
  const u: Usage = await deps.meter.get(keyId);
  const metered =
    kind === "upstream"
      ? `${u.gatewayTokens} tokens, ${u.gatewayTurns} turns`
      : `${u.llmTokens} tokens, ${u.ballots} ballots`;
  rows.push(
    `| ${kind === "upstream" ? "gateway model endpoint" : "LLM voters"} | ${label} | ${res.status} | ${spent} | ${metered}; ${u.requests} request |`,
  );
}

const u15 = usage(10, 5);
await measure("upstream", "a normal reply", { upstream: [call(u15)] }, reportedTokens(call(u15))!);
await measure(
  "upstream",
  "401 whose text carries a key and an org id",
  { upstream: [{ json: { error: { message: "Incorrect API key (org org-secret-123)" } }, status: 401 }] },
  "none (an error)",
);
await measure(
  "upstream",
  "an HTML page for JSON",
  { upstream: [{ raw: "<html>bad gateway</html>", status: 200, type: "text/html" }] },
  "none reported",
);
await measure(
  "upstream",
  "a body trickled past the deadline (and the SDK's one retry)",
  { upstream: [{ trickle: { chunk: " ", everyMs: 100 } }] },
  "unknown: never finished",
);
await measure("upstream", "an endless body (cut at 8 MiB)", { upstream: [{ endless: true }] }, "unknown: cut off");
await measure(
  "upstream",
  "usage 2^53−1 + 5",
  { upstream: [call(usage(2 ** 53 - 1, 5))] },
  "claimed 9,007,199,254,740,996",
);
await measure(
  "upstream",
  'usage −7 and "9"',
  { upstream: [call({ prompt_tokens: -7, completion_tokens: "9" })] },
  'claimed −7 + "9" (not counts)',
);
await measure(
  "voters",
  "two good ballots",
  { a: [ballot(["sib-a", "sib-b"])], b: [ballot(["sib-b", "sib-a"])] },
  "150 + 150",
);
await measure(
  "voters",
  "empty then null content; unknown then duplicate ids (503: quorum missed)",
  {
    a: [
      { json: completion({ content: "", usage: usage(100, 50) }) },
      { json: completion({ content: null, usage: usage(100, 50) }) },
    ],
    b: [ballot(["sib-a", "nope"]), ballot(["sib-a", "sib-a"])],
  },
  "4 × 150 = 600",
);
await measure(
  "voters",
  "one unusable answer, then its retry trickled past the deadline",
  {
    a: [ballot(["sib-a", "sib-b"])],
    b: [{ json: completion({ content: "no JSON", usage: usage(100, 50) }) }, { trickle: { chunk: " ", everyMs: 100 } }],
  },
  "150 + 150 known; the retry unknown",
);
await measure(
  "voters",
  "an endless body (cut at 1 MiB, or aborted at the deadline)",
  { a: [ballot(["sib-a", "sib-b"])], b: [{ endless: true }] },
  "150 known; the other unknown: cut off",
);
await measure(
  "voters",
  "usage 2^53−1 + 2^53−1 from one voter",
  { a: [ballot(["sib-a", "sib-b"], usage(2 ** 53 - 1, 2 ** 53 - 1))], b: [ballot(["sib-b", "sib-a"])] },
  "claimed 1.8e16 + 150",
);

console.log(
  "| endpoint | failure mode | HTTP | spent (as the endpoint reported it) | metered to the key |\n|---|---|---|---|---|",
);
for (const r of rows) console.log(r);
await api.close();
await Promise.all([upstream.close(), voterA.close(), voterB.close()]);
process.exit(0);
