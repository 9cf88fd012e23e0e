import { describe, expect, it } from "vitest";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ROLLOUT_WRITES } from "@harness-s/adapters/stores";
import { bigRollout } from "../contract/rollouts.contract.ts";

// Issue 54 (bench): `grouped` rollout writes. DynamoDB refuses a transaction that names one item
// twice ("Transaction request cannot include multiple operations on one item"); DynamoDB Local
// accepts it, so this fake stands in for the cloud's rule.
function strictDoc() {
  const sent: string[][] = [];
  const doc = {
    send: async (command: {
      input: { TransactItems?: { Put: { Item: { jobId: string; part: string } } }[]; Item?: { part: string } };
    }) => {
      const parts = command.input.TransactItems?.map((t) => t.Put.Item.part) ?? [command.input.Item!.part];
      sent.push(parts);
      if (new Set(parts).size < parts.length)
        throw Object.assign(new Error("Transaction request cannot include multiple operations on one item"), {
          name: "ValidationException",
        });
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  return { doc, sent };
}

describe("grouped rollout writes", () => {
  it("a slot asked twice at once is written once (the second a duplicate), never twice in one transaction", async () => {
    const { doc, sent } = strictDoc();
    const put = ROLLOUT_WRITES.grouped(doc, "Rollouts");
    const outcomes = await Promise.all([
      put("j", { index: 0, rollout: bigRollout(2, 1) }),
      put("j", { index: 1, rollout: bigRollout(2, 2) }),
      put("j", { index: 1, rollout: bigRollout(2, 3) }),
    ]);
    expect(outcomes).toEqual(["stored", "stored", "duplicate"]);
    expect(sent).toEqual([["000000#000", "000001#000"]]);
  });
});
