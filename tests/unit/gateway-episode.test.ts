import { describe, expect, it } from "vitest";
import { ConflictError } from "@harness-s/core";
import {
  GatewayEpisode,
  episodeDatums,
  genericObserver,
  type RecordedTurn,
  type UpstreamChat,
  type UpstreamTurn,
} from "@harness-s/core/gateway";
import { makeSpec, makeTask } from "../factories.ts";

const reply = (name: string): UpstreamTurn => ({
  completion: { id: "c" },
  reply: { content: null, toolCalls: [{ name, arguments: "{}" }] },
});
const turn = (promptIds: number[], completionIds: number[], id?: string): RecordedTurn => ({
  action: "x",
  harnessNotes: [],
  prompt: "p",
  turn: {
    completion: {},
    reply: { content: null, toolCalls: [] },
    promptIds,
    completionIds,
    logprobs: completionIds.map(() => -1),
    ...(id ? { id } : {}),
  },
});

describe("episodeDatums: the token sequence of a gateway episode", () => {
  it("joins turns whose prompt repeats the sequence so far (vLLM), or whose id continues (a policy worker's new ids only), and masks only completions", () => {
    const full = episodeDatums("e", [turn([1, 2], [3, 4]), turn([1, 2, 3, 4, 5], [6])], 1);
    expect(full.datums).toHaveLength(1);
    expect(full.datums[0]).toMatchObject({
      ids: [1, 2, 3, 4, 5, 6],
      loss_mask: [0, 0, 1, 1, 0, 1],
      behaviour_logprobs: [0, 0, -1, -1, 0, -1],
      advantage: 1,
    });
    const delta = episodeDatums("e", [turn([1, 2], [3], "ep"), turn([9], [7], "ep")], 0);
    expect(delta.datums[0]!.ids).toEqual([1, 2, 3, 9, 7]);
  });

  it("starts another datum when a turn continues neither way, and says which turns have no ids", () => {
    const out = episodeDatums(
      "e",
      [
        turn([1, 2], [3], "a"),
        turn([8, 8], [9], "b"),
        { ...turn([], []), turn: { completion: {}, reply: { content: null, toolCalls: [] } } },
      ],
      0,
    );
    expect(out.datums.map((d) => d.ids)).toEqual([
      [1, 2, 3],
      [8, 8, 9],
    ]);
    expect(out.untrained).toMatch(/turns 2:/);
  });
});

describe("a gateway episode's requests", () => {
  const start = (upstream: UpstreamChat) =>
    new GatewayEpisode({
      id: "ep",
      keyId: "k",
      opening: "o",
      submitTool: "submit",
      task: makeTask({ id: "t1" }),
      harness: makeSpec({ budget: { maxTurns: 2 } }),
      decisionId: "d",
      preamble: [],
      tools: [{ name: "look", action: "look", description: "", parameters: {} }],
      upstream,
      observer: genericObserver({} as never),
      seed: 1,
    });
  const first = [{ role: "user" as const, content: "go" }];

  it("answers a repeated request with the same reply (its answer was lost), refuses a concurrent one, and ends at the turn budget", async () => {
    // Prepare
    let calls = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const episode = start({
      complete: async () => {
        if (calls++ === 1) await gate;
        return reply("look");
      },
    });
    // Act + Assess
    const a = await episode.advance(first, {});
    expect(await episode.advance(first, {})).toBe(a);
    const echo = {
      role: "assistant" as const,
      content: null,
      tool_calls: [{ id: "c", type: "function" as const, function: { name: "look", arguments: "{}" } }],
    };
    const next = [...first, echo, { role: "tool" as const, content: "ok", tool_call_id: "c" }];
    const pending = episode.advance(next, {});
    await expect(episode.advance(next, {})).rejects.toBeInstanceOf(ConflictError);
    release();
    expect((await pending).kind).toBe("reply");
    const last = await episode.advance(
      [...next, echo, { role: "tool" as const, content: "ok", tool_call_id: "c" }],
      {},
    );
    expect(last).toEqual({ kind: "ended", reason: "budget-exhausted" });
    expect(calls).toBe(2);
  });
});
