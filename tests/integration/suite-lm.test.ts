import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { combosFor, defaultEmbeddedSettings, embeddedSetup, families } from "@harness-s/envs";
import { WarmStartOptions, warmStartConversations } from "../../packages/cli/src/suite-lm/warm-start.ts";
import { SuiteLmRecipe, ensureSuiteLm } from "../../packages/cli/src/suite-lm/suite-lm.ts";

// The suite LM's recipe at a toy size, built through the worker's venv (created when missing).
const toy = (seed: number) =>
  SuiteLmRecipe.parse({
    size: "toy",
    seed,
    vocab_size: 400,
    epochs: 1,
    instruct_epochs: 1,
    warmStart: { suiteSeeds: [9001], h0Samples: 1, siblingSamples: 1 },
    instruct: { conversations: 40 },
  });

describe("suite LM warm start", () => {
  it("holds train and dev tasks only: no held-out task, no held-out requirement combination", async () => {
    // Prepare
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const heldout = new Set(families.flatMap((f) => combosFor(f, "heldout").map((c) => `${f.name}:${c.join("+")}`)));
    const heldoutIds = new Set((await setup.instance(9001)).heldout.map((t) => t.id));
    // Act
    const data = await warmStartConversations(
      setup,
      WarmStartOptions.parse({ suiteSeeds: [9001], h0Samples: 1, siblingSamples: 2 }),
    );
    // Assess
    expect(data.length).toBeGreaterThan(300);
    expect(new Set(data.map((d) => d.task.split))).toEqual(new Set(["train", "dev"]));
    expect(
      data.filter((d) => heldoutIds.has(d.task.id) || heldout.has(`${d.task.family}:${d.task.requirements.join("+")}`)),
    ).toEqual([]);
    expect(new Set(data.map((d) => d.harnessId)).size).toBeGreaterThan(3);
    expect(data.some((d) => d.success) && data.some((d) => !d.success)).toBe(true);
  });

  it("builds deterministically: the same seed gives the same weights hash, another seed other weights; a second ask is served from the cache", async () => {
    // Prepare
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => mkdtemp(join(tmpdir(), "suite-lm-"))));
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const build = (seed: number, dir: string) => ensureSuiteLm(toy(seed), dir, undefined, setup);
    // Act
    const [first, again, other] = await Promise.all([build(0, a!), build(0, b!), build(1, c!)]);
    const cached = await build(0, a!);
    // Assess
    expect(first.cached).toBe(false);
    expect(again.weights_sha256).toBe(first.weights_sha256);
    expect(again.hash).toBe(first.hash);
    expect(other.weights_sha256).not.toBe(first.weights_sha256);
    expect(other.hash).not.toBe(first.hash);
    expect(cached).toMatchObject({ cached: true, weights_sha256: first.weights_sha256, path: first.path });
    expect(first.name).toBe(`suite-lm-${first.hash}`);
    // The instruction-following stage ran first, on its own corpus, and is in the record.
    expect(first.instruct).toMatchObject({ conversations: 40, losses: [expect.any(Number)] });
    expect(first.instruct!.tokens).toBeGreaterThan(0);
    expect(first.conversations).toBeGreaterThan(first.instruct!.conversations);
  }, 240_000);
});
