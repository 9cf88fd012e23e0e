import { describe, expect, it } from "vitest";
import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import { ConflictError } from "@harness-s/core";
import { EpisodeClosedError, UpstreamError } from "@harness-s/core/gateway";
import {
  GatewayEpisodes,
  genericObserver,
  type ChatMsg,
  type GatewayEpisodeInit,
  type UpstreamChat,
  type UpstreamTurn,
} from "@harness-s/core/gateway";
import { makeSpec, makeTask } from "../factories.ts";

// A scripted model: `look` until a tool output says "found", then `submit`; every prompt it was asked is kept.
function scriptedModel(opts: { gate?: Promise<void>; failFirst?: number } = {}) {
  const prompts: string[] = [];
  let failures = opts.failFirst ?? 0;
  const upstream: UpstreamChat = {
    async complete(req) {
      prompts.push(JSON.stringify(req.messages));
      await opts.gate;
      if (failures-- > 0) throw new UpstreamError("scripted outage");
      const name = String(req.messages.at(-1)?.content ?? "").includes("found") ? "submit" : "look";
      return {
        completion: { id: `c${prompts.length}` },
        reply: { content: `turn ${prompts.length}`, toolCalls: [{ name, arguments: "{}" }] },
      };
    },
  };
  return { upstream, prompts };
}

const harness = makeSpec({
  id: "sib",
  budget: { maxTurns: 6 },
  instruction: { systemAppend: "CHECK FIRST", toolNotes: {} },
  provenance: { direction: "recovery" },
});
const task = makeTask({ id: "t1", params: {} });
const tools = [
  { name: "look", action: "look", description: "look", parameters: {} },
  { name: "submit", action: "submit", description: "commit", parameters: {} },
];
const initFor = (upstream: UpstreamChat, id = "ep-1"): GatewayEpisodeInit => ({
  id,
  keyId: "k",
  opening: "o",
  task,
  harness,
  decisionId: "d",
  preamble: [{ role: "system", content: "agent system" }],
  tools,
  submitTool: "submit",
  upstream,
  observer: genericObserver(task),
  seed: 7,
});
const runtime = (upstream: UpstreamChat) => async () => ({ harness, upstream, observer: genericObserver(task) });
const opening: ChatMsg[] = [
  { role: "system", content: "agent system" },
  { role: "user", content: "find it" },
];
/** The agent's next conversation: the reply it got echoed, then its tool's output. */
function extend(messages: ChatMsg[], reply: UpstreamTurn, output: string): ChatMsg[] {
  const call = reply.reply.toolCalls[0]!;
  return [
    ...messages,
    {
      role: "assistant",
      content: reply.reply.content,
      tool_calls: [{ id: `call${messages.length}`, type: "function", function: call }],
    },
    { role: "tool", content: output, tool_call_id: `call${messages.length}` },
  ];
}
const replyOf = (out: { kind: string; turn?: UpstreamTurn }): UpstreamTurn => {
  if (out.kind !== "reply" || !out.turn) throw new Error(`expected a reply, got ${out.kind}`);
  return out.turn;
};

describe("durable gateway episodes: any process continues any episode from the store", () => {
  it("turns alternating between two processes (and a restart) ask the model exactly what one process asks, once per turn", async () => {
    // Arrange: the same three turns in one process, as the reference.
    const ref = scriptedModel();
    const one = new GatewayEpisodes(new MemoryGatewayEpisodeStore());
    let conversation = opening;
    let out = (await one.start(initFor(ref.upstream), { poolId: "p" }, conversation, {}, 0)).out;
    for (const output of ["nothing", "found it"]) {
      conversation = extend(conversation, replyOf(out), output);
      out = (
        await one.advance((await one.load("k", "ep-1", 1))!, {
          messages: conversation,
          params: {},
          now: 1,
          runtime: runtime(ref.upstream),
        })
      ).out;
    }
    // Act: the same turns over one store, alternating between two processes, the third one new (a restart).
    const model = scriptedModel();
    const store = new MemoryGatewayEpisodeStore();
    const processes = [new GatewayEpisodes(store), new GatewayEpisodes(store), new GatewayEpisodes(store)];
    conversation = opening;
    out = (await processes[0]!.start(initFor(model.upstream), { poolId: "p" }, conversation, {}, 0)).out;
    for (const [i, output] of ["nothing", "found it"].entries()) {
      const gw = processes[i + 1]!;
      conversation = extend(conversation, replyOf(out), output);
      out = (
        await gw.advance((await gw.load("k", "ep-1", 1))!, {
          messages: conversation,
          params: {},
          now: 1,
          runtime: runtime(model.upstream),
        })
      ).out;
    }
    // Assert: the same prompts, one per turn (a rebuilt episode replays the recorded turns, asking nothing), and the
    // episode ended on submit.
    expect(model.prompts).toEqual(ref.prompts);
    expect(model.prompts).toHaveLength(3);
    expect(replyOf(out).reply.toolCalls[0]!.name).toBe("submit");
    const trajectory = await processes[0]!.trajectory("k", "ep-1", 2);
    expect(trajectory).toMatchObject({ status: "ended", harnessId: "sib", systemText: "CHECK FIRST" });
    expect(trajectory!.turns.map((t) => t.action)).toEqual(["look", "look", "submit"]);
  });

  it("two concurrent requests for one step advance it once: a repeat gets the same answer, a different one a 409", async () => {
    // Arrange: an episode at its first reply; the model answers only when released.
    let release!: () => void;
    const model = scriptedModel({ gate: new Promise<void>((r) => (release = r)) });
    const store = new MemoryGatewayEpisodeStore();
    const [a, b] = [new GatewayEpisodes(store, { leasePollMs: 5 }), new GatewayEpisodes(store, { leasePollMs: 5 })];
    const t = Date.now();
    const starting = a.start(initFor(model.upstream), { poolId: "p" }, opening, {}, t);
    release();
    const next = extend(opening, replyOf((await starting).out), "nothing");
    const stored = (await a.load("k", "ep-1", t))!;
    // Act: the same request on both processes at once, and a different continuation on a third.
    const [first, second] = await Promise.all([
      a.advance(stored, { messages: next, params: {}, now: t, runtime: runtime(model.upstream) }),
      b.advance(stored, { messages: next, params: {}, now: t, runtime: runtime(model.upstream) }),
    ]);
    const other = extend(opening, replyOf((await starting).out), "something else");
    // Assert
    expect(replyOf(first.out)).toEqual(replyOf(second.out));
    expect(model.prompts).toHaveLength(2);
    expect((await a.load("k", "ep-1", t))!.meta.steps).toBe(2);
    await expect(
      b.advance(stored, { messages: other, params: {}, now: t, runtime: runtime(model.upstream) }),
    ).rejects.toBeInstanceOf(ConflictError);
  });

  it("an upstream failure stores no step: the agent's retry is answered, and the failed call is still metered", async () => {
    const model = scriptedModel({ failFirst: 1 });
    const gw = new GatewayEpisodes(new MemoryGatewayEpisodeStore());
    const failed = await gw.start(initFor(model.upstream), { poolId: "p" }, opening, {}, 0);
    expect(failed.out.kind).toBe("upstream-error");
    expect(await gw.load("k", "ep-1", 1)).toBeUndefined();
    const retried = await gw.start(initFor(model.upstream), { poolId: "p" }, opening, {}, 1);
    expect(replyOf(retried.out).reply.toolCalls[0]!.name).toBe("look");
    expect(failed.spent.turns + retried.spent.turns).toBe(1);
    expect(model.prompts).toHaveLength(2);
  });

  it("an idle episode is closed (410) but its trajectory stays readable until it expires", async () => {
    const model = scriptedModel();
    const gw = new GatewayEpisodes(new MemoryGatewayEpisodeStore(), { idleMs: 1_000 });
    const { out } = await gw.start(initFor(model.upstream), { poolId: "p" }, opening, {}, 0);
    const stored = (await gw.load("k", "ep-1", 5_000))!;
    await expect(
      gw.advance(stored, {
        messages: extend(opening, replyOf(out), "x"),
        params: {},
        now: 5_000,
        runtime: runtime(model.upstream),
      }),
    ).rejects.toBeInstanceOf(EpisodeClosedError);
    expect((await gw.trajectory("k", "ep-1", 5_001))!.status).toBe("closed");
    const expired = stored.meta.expiresAt + 1;
    expect(await gw.trajectory("k", "ep-1", expired)).toBeUndefined();
  });

  it("an episode whose harness changed since it was recorded is not continued on a replay that asks differently (410)", async () => {
    const model = scriptedModel();
    const store = new MemoryGatewayEpisodeStore();
    const { out } = await new GatewayEpisodes(store).start(initFor(model.upstream), { poolId: "p" }, opening, {}, 0);
    const changed = makeSpec({ ...harness, instruction: { systemAppend: "ANOTHER TEXT", toolNotes: {} } });
    const restarted = new GatewayEpisodes(store);
    const next = extend(opening, replyOf(out), "x");
    await expect(
      restarted.advance((await restarted.load("k", "ep-1", 1))!, {
        messages: next,
        params: {},
        now: 1,
        runtime: async () => ({ harness: changed, upstream: model.upstream, observer: genericObserver(task) }),
      }),
    ).rejects.toThrow(/could not be continued here: model turn 1 was asked a different prompt/);
    expect(model.prompts).toHaveLength(1);
  });
});
