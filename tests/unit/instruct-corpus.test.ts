import { describe, expect, it } from "vitest";
import type { HarnessSpec } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup, families } from "@harness-s/envs";
import { instructionCorpus } from "../../packages/cli/src/suite-lm/instruct-corpus.ts";
import { InstructOptions } from "../../packages/cli/src/suite-lm/recipe.ts";

/** Every text a harness of the pool can show: its appended instruction, tool notes and triggers' texts. */
const harnessTexts = (h: HarnessSpec) => [
  h.instruction.systemAppend,
  ...Object.values(h.instruction.toolNotes),
  ...[...h.instruction.cues, ...h.postObservation, ...h.skills.entries].map((t) => t.text),
];

describe("the instruction-following corpus", () => {
  it("holds no suite task's text, no instance's harness text and no held-out combination of tags", async () => {
    // Prepare: the suite's texts on development, warm-start and block instances.
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const secrets = new Set<string>();
    for (const seed of [101, 7201, 9001]) {
      const inst = await setup.instance(seed);
      for (const task of [...inst.train, ...inst.dev, ...inst.heldout]) secrets.add(task.instruction);
      for (const task of inst.heldout) if (task.tags.length > 2) secrets.add(task.tags.slice(1).join(", "));
      for (const h of [inst.evolution.pool.base, ...inst.evolution.pool.siblings])
        for (const t of harnessTexts(h)) secrets.add(t);
    }
    for (const f of families) for (const cue of Object.values(f.cuesFor).flat()) secrets.add(cue.text);
    secrets.delete("");
    // Act
    const corpus = instructionCorpus(InstructOptions.parse({}));
    const text = JSON.stringify(corpus);
    // Assess
    expect(corpus.length).toBe(InstructOptions.parse({}).conversations);
    expect(secrets.size).toBeGreaterThan(50);
    expect([...secrets].filter((s) => text.includes(JSON.stringify(s).slice(1, -1)))).toEqual([]);
  }, 120_000);

  it("asks for its calls in the text: each redirected turn names the call it makes, and the same seed gives the same corpus", () => {
    // Act
    const corpus = instructionCorpus({ conversations: 300, invented: 0.5, seed: 4 });
    // Assess
    const redirected = corpus.flatMap((c) => c.turns.filter((t) => t.hinted));
    expect(redirected.length).toBeGreaterThan(300);
    for (const t of redirected) expect(t.append![0]!.content).toMatch(new RegExp(`\\b${t.call.name}\\b`));
    for (const c of corpus) expect(new Set(c.tools.map((t) => t.function.name))).toContain(c.turns[0]!.call.name);
    expect(new Set(corpus.map((c) => c.tools.map((t) => t.function.name).join())).size).toBeGreaterThan(250);
    expect(instructionCorpus({ conversations: 300, invented: 0.5, seed: 4 })).toEqual(corpus);
  });
});
