import { parseHarnessSpec, type HarnessSpec } from "@harness-s/core";
import { families } from "./suite.ts";

/** H0 for the embedded suite: the plain tool loop, raw observations, 10 turns, no hooks. */
export const embeddedH0: HarnessSpec = parseHarnessSpec({
  id: "h0",
  description: "Base harness: system prompt, tool list, raw observations, 10 turns, no hooks.",
  budget: { maxTurns: 10 },
  provenance: { direction: "base", hypothesis: "the plain AgentBench-style loop", proposer: "hand-written" },
});

/** Names the embedded mutation proposer may combine: tools, facts and signal events per family. */
export function embeddedVocabulary(): { tools: string[]; facts: string[] } {
  return {
    tools: [...new Set(families.flatMap((f) => f.tools))].filter((t) => t !== "submit"),
    facts: [
      "authed",
      "docs-read",
      "listed",
      "located",
      "read",
      "edited",
      "verified",
      "tests-pass",
      "schema-known",
      "queried",
      "formatted",
      "mutated",
      "committed",
    ],
  };
}
