import { describe, expect, it } from "vitest";
import { datumFromTurns } from "@harness-s/core/protocol";
import { episodeDatums, type RecordedTurn } from "@harness-s/core/gateway";

// Issue 52, item 6: a caller's arrays are never spread into a call. A million prompt ids in one
// turn overflowed the call stack (`ids.push(...t.promptIds)`: ~130k arguments in Node), and a
// 128k-token context would have too.
const LONG = 1_000_000;

describe("token rows of long prompts", () => {
  it("a rescued rollout's datum holds a turn of a million prompt ids", () => {
    const d = datumFromTurns(
      "s1",
      "g1",
      [{ promptIds: Array(LONG).fill(5), completionIds: [3, 4], logprobs: [-0.5, -0.25], trained: true }],
      1,
    );
    expect(d.ids).toHaveLength(LONG + 2);
    expect([d.loss_mask.at(-3), d.loss_mask.at(-2), d.loss_mask.at(-1)]).toEqual([0, 1, 1]);
    expect(d.behaviour_logprobs.slice(-2)).toEqual([-0.5, -0.25]);
  });

  it("a gateway episode's datums hold a turn of a million prompt ids", () => {
    const turn = {
      promptIds: Array(LONG).fill(7),
      completionIds: [9],
      logprobs: [-1],
      reply: { content: "x", toolCalls: [] },
    } as unknown as RecordedTurn["turn"];
    const { datums } = episodeDatums("ep-1", [{ turn, action: "submit", harnessNotes: [], prompt: "h" }], 1);
    expect(datums[0]!.ids).toHaveLength(LONG + 1);
  });
});
