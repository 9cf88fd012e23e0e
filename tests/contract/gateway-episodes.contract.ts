import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { EpisodeMeta, EpisodeStep, GatewayEpisodeStore } from "@harness-s/core/gateway";

export function episodeMeta(over: Partial<EpisodeMeta> = {}): EpisodeMeta {
  return {
    keyId: "k1",
    id: "ep-1",
    opening: "open-a",
    poolId: "p",
    harnessId: "h0",
    systemText: "",
    decisionId: "d1",
    task: { id: "t1", family: "app", instruction: "do it", tags: ["app"] },
    tools: [{ name: "look", action: "look", description: "look", parameters: { type: "object" } }],
    submitTool: "submit",
    seed: 7,
    startedAt: 1_000,
    lastUsed: 1_000,
    steps: 1,
    status: "running",
    reward: null,
    leaseUntil: 0,
    expiresAt: 10_000_000,
    ...over,
  };
}

export function episodeStep(n: number, over: Partial<EpisodeStep> = {}): EpisodeStep {
  return {
    n,
    messages: [
      { role: n === 0 ? "user" : "tool", content: `message ${n}`, ...(n === 0 ? {} : { tool_call_id: `c${n}` }) },
    ],
    turns: [
      {
        turn: { completion: { id: `c${n}` }, reply: { content: null, toolCalls: [{ name: "look", arguments: "{}" }] } },
        action: "look",
        harnessNotes: [],
        prompt: `p${n}`,
      },
    ],
    out: {
      kind: "reply",
      turn: { completion: { id: `c${n}` }, reply: { content: null, toolCalls: [{ name: "look", arguments: "{}" }] } },
    },
    at: 1_000 + n,
    ...over,
  };
}

const moved = { status: "running" as const, lastUsed: 2_000, expiresAt: 10_000_000 };

/** What every GatewayEpisodeStore must do (run against the in-memory store and DynamoDB Local). */
export function gatewayEpisodeStoreContract(name: string, fresh: () => Promise<GatewayEpisodeStore>): void {
  describe(`GatewayEpisodeStore contract: ${name}`, () => {
    it("creates an episode once per key and id; another key's episode of the same id is its own", async () => {
      const store = await fresh();
      expect(await store.create(episodeMeta(), episodeStep(0))).toBe(true);
      expect(await store.create(episodeMeta({ decisionId: "other" }), episodeStep(0))).toBe(false);
      expect(await store.create(episodeMeta({ keyId: "k2" }), episodeStep(0, { at: 5 }))).toBe(true);
      const mine = await store.load("k1", "ep-1");
      expect(mine?.meta).toEqual(episodeMeta());
      expect(mine?.steps).toEqual([episodeStep(0)]);
      expect((await store.load("k2", "ep-1"))?.steps[0]?.at).toBe(5);
      expect(await store.load("k1", "ep-")).toBeUndefined();
      expect(await store.load("k3", "ep-1")).toBeUndefined();
    });

    it("appends step n only when the episode has n steps, releasing the lease, and loads the steps in order", async () => {
      const store = await fresh();
      await store.create(episodeMeta(), episodeStep(0));
      expect(await store.append("k1", "ep-1", episodeStep(2), moved)).toBe(false);
      for (let n = 1; n <= 11; n++) {
        expect(await store.lease("k1", "ep-1", `h${n}`, 2_000, 9_000)).toEqual({ steps: n });
        expect(await store.append("k1", "ep-1", episodeStep(n), moved)).toBe(true);
      }
      expect(await store.append("k1", "ep-1", episodeStep(5), moved)).toBe(false);
      const loaded = await store.load("k1", "ep-1");
      expect(loaded?.steps.map((s) => s.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      expect(loaded?.meta).toMatchObject({ steps: 12, lastUsed: 2_000, leaseUntil: 0 });
      expect(loaded?.meta.leaseHolder).toBeUndefined();
    });

    it("keeps a step larger than one item (a long tool output) whole", async () => {
      const store = await fresh();
      await store.create(episodeMeta(), episodeStep(0));
      const big = episodeStep(1, {
        messages: [{ role: "tool", content: randomBytes(450_000).toString("base64"), tool_call_id: "c1" }],
      });
      expect(await store.append("k1", "ep-1", big, moved)).toBe(true);
      expect((await store.load("k1", "ep-1"))?.steps[1]).toEqual(big);
    });

    it("leases an episode to one request at a time: another waits until it is released or expires", async () => {
      const store = await fresh();
      await store.create(episodeMeta(), episodeStep(0));
      expect(await store.lease("k1", "ep-1", "a", 2_000, 5_000)).toEqual({ steps: 1 });
      expect(await store.lease("k1", "ep-1", "b", 2_001, 5_001)).toBeUndefined();
      expect(await store.lease("k1", "ep-1", "a", 2_002, 5_002)).toEqual({ steps: 1 });
      await store.release("k1", "ep-1", "b");
      expect(await store.lease("k1", "ep-1", "b", 2_003, 5_003)).toBeUndefined();
      await store.release("k1", "ep-1", "a");
      expect(await store.lease("k1", "ep-1", "b", 2_004, 5_004)).toEqual({ steps: 1 });
      expect(await store.lease("k1", "ep-1", "c", 6_000, 9_000)).toEqual({ steps: 1 });
      expect(await store.lease("k2", "ep-1", "c", 6_000, 9_000)).toBeUndefined();
    });

    it("finds a key's episodes by their opening, newest first, and never another key's", async () => {
      const store = await fresh();
      for (const [i, keyId] of ["k1", "k1", "k2", "k1"].entries())
        await store.create(episodeMeta({ keyId, id: `ep-${i}`, startedAt: 1_000 + i }), episodeStep(0));
      await store.create(episodeMeta({ id: "ep-other", opening: "open-b" }), episodeStep(0));
      expect((await store.withOpening("k1", "open-a", 10)).map((e) => e.meta.id)).toEqual(["ep-3", "ep-1", "ep-0"]);
      expect((await store.withOpening("k1", "open-a", 2)).map((e) => e.meta.id)).toEqual(["ep-3", "ep-1"]);
      expect((await store.withOpening("k2", "open-a", 10)).map((e) => e.meta.id)).toEqual(["ep-2"]);
      expect(await store.withOpening("k1", "open-", 10)).toEqual([]);
    });

    it("updates the reward and the status of an episode that exists, and nothing else", async () => {
      const store = await fresh();
      await store.create(episodeMeta(), episodeStep(0));
      expect(await store.update("k1", "ep-1", { reward: 0.5 })).toMatchObject({ reward: 0.5, status: "running" });
      expect(await store.update("k1", "ep-1", { status: "closed" })).toMatchObject({ reward: 0.5, status: "closed" });
      expect(await store.update("k2", "ep-1", { reward: 1 })).toBeUndefined();
      expect(await store.load("k2", "ep-1")).toBeUndefined();
    });
  });
}
