import { describe, expect, it } from "vitest";
import { ValidationError } from "@harness-s/core";
import { panelFromSecrets } from "../../functions/panel-config.ts";

const panel = JSON.stringify({
  voters: [
    {
      kind: "llm",
      id: "family-a",
      baseURL: "http://127.0.0.1:9/v1",
      model: "a-small",
      apiKeySecret: "KEY_A",
      weight: 2,
    },
    { kind: "llm", id: "family-b", baseURL: "http://127.0.0.1:9/v1", model: "b-small", apiKeySecret: "LlmApiKey" },
    { kind: "statistical", id: "failure-tag-evidence" },
  ],
  quorum: 2,
  onQuorumMiss: "statistical",
});

describe("the cloud's voter panel (VoterPanel and VoterKeys secrets)", () => {
  it("builds the panel's voters and settings from the document, with keys from VoterKeys or LlmApiKey", () => {
    // Act
    const routing = panelFromSecrets({ panel, keys: JSON.stringify({ KEY_A: "sk-a" }), llmApiKey: "sk-b" })!;
    // Assess
    expect(routing.voters.map((v) => v.id)).toEqual(["family-a", "family-b", "failure-tag-evidence"]);
    expect(routing.options).toEqual({
      weights: { "family-a": 2, "family-b": 1, "failure-tag-evidence": 1 },
      quorum: 2,
    });
    expect(routing.fallback?.length).toBeGreaterThan(0);
  });

  it("no VoterPanel secret: no panel", () => {
    expect(panelFromSecrets({ keys: JSON.stringify({ KEY_A: "sk-a" }) })).toBeUndefined();
  });

  it("refuses a malformed document, malformed keys and a key the document names but nobody set, each with the problem named", () => {
    const fails = (secrets: Parameters<typeof panelFromSecrets>[0]) => {
      try {
        panelFromSecrets(secrets);
      } catch (err) {
        expect(err).toBeInstanceOf(ValidationError);
        return (err as ValidationError).message;
      }
      throw new Error("accepted");
    };
    expect(fails({ panel: "{voters" })).toMatch(/VoterPanel secret.*not valid JSON/s);
    expect(fails({ panel: JSON.stringify({ voters: [{ kind: "llm", id: "x" }] }) })).toMatch(
      /VoterPanel secret.*voters\.0\.baseURL/s,
    );
    expect(fails({ panel, keys: JSON.stringify({ KEY_A: 7 }) })).toMatch(/VoterKeys secret.*KEY_A/s);
    expect(fails({ panel, keys: JSON.stringify({ KEY_A: "sk-a" }) })).toMatch(
      /family-b: the secret LlmApiKey is not set/,
    );
  });
});
