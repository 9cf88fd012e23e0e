import { describe, expect, it } from "vitest";
import { runEpisode, type Policy, type Task } from "@harness-s/core";
import {
  EmbeddedEnvironment,
  buildSuite,
  combosFor,
  families,
  familyByName,
  misleadsParam,
  remedyOf,
} from "@harness-s/envs";
import { makeSpec } from "../factories.ts";

const env = new EmbeddedEnvironment();
const play = (actions: string[]): Policy => {
  let i = 0;
  return {
    version: () => 0,
    act: async () => ({ action: actions[Math.min(i++, actions.length - 1)]!, logProb: 0 }),
    update: async () => ({ version: 0, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } }),
  };
};
const run = (task: Task, actions: string[], maxTurns = 15) =>
  runEpisode(task, makeSpec({ budget: { maxTurns } }), 1, { env, policy: play(actions) });
const task = (family: string, requirements: string[], pages = 1): Task => ({
  id: "t",
  family,
  split: "train",
  instruction: "",
  tags: [family],
  requirements,
  cues: [],
  params: { pages },
});

describe("embedded suite", () => {
  it("is deterministic and has the documented split sizes", () => {
    const a = buildSuite({});
    expect(buildSuite({})).toEqual(a);
    expect([a.train.length, a.dev.length, a.heldout.length]).toEqual([120, 45, 63]);
  });

  it("held-out holds only requirement combinations never seen in train or dev", () => {
    const s = buildSuite({});
    const key = (t: Task) => `${t.family}:${[...t.requirements].sort().join("+")}`;
    const seen = new Set([...s.train, ...s.dev].map(key));
    for (const t of s.heldout) expect(seen.has(key(t))).toBe(false);
    for (const f of families)
      for (const r of f.requirements)
        expect(s.train.some((t) => t.family === f.name && t.requirements.includes(r))).toBe(true);
  });

  it("validation protocol: holds the train pair a+b back for evaluation and builds no held-out combination", () => {
    // Prepare
    const test = buildSuite({});
    // Act
    const val = buildSuite({ protocol: "validation" });
    // Assess
    const key = (t: Task) => `${t.family}:${t.requirements.join("+")}`;
    const heldoutCombos = new Set(test.heldout.map(key));
    expect([...val.train, ...val.dev, ...val.heldout].some((t) => heldoutCombos.has(key(t)))).toBe(false);
    for (const f of families) {
      const [a, b] = f.requirements;
      expect(combosFor(f, "heldout", "validation")).toEqual([[a, b]]);
      const evaluated = val.heldout.filter((t) => t.family === f.name);
      expect(evaluated).toHaveLength(21);
      expect(evaluated.every((t) => key(t) === `${f.name}:${a}+${b}` && t.id.includes("-validation-"))).toBe(true);
      expect([...val.train, ...val.dev].some((t) => key(t) === `${f.name}:${a}+${b}`)).toBe(false);
    }
    const stripCues = (t: Task) => ({ ...t, cues: [], instruction: t.instruction.split(" — ")[0] });
    const shared = test.train.filter((t) => t.requirements.length < 2).map(stripCues);
    expect(val.train.map(stripCues)).toEqual(shared);
  });

  it("cues only train tasks, only cuable kinds, at about the cue rate", () => {
    const none = buildSuite({ cueRate: 0 });
    expect(none.train.every((t) => t.cues.length === 0)).toBe(true);
    const all = buildSuite({ cueRate: 1 });
    const cuable = all.train.filter((t) => t.requirements.some((r) => all.options.cuable.includes(r)));
    expect(cuable.every((t) => t.cues.length > 0)).toBe(true);
    expect([...all.dev, ...all.heldout].every((t) => t.cues.length === 0)).toBe(true);
    expect(
      all.train
        .filter((t) => t.requirements.length > 0 && t.requirements.every((r) => !all.options.cuable.includes(r)))
        .every((t) => t.cues.length === 0),
    ).toBe(true);
  });

  it("app: auth, docs and pagination must all be satisfied", async () => {
    const t = task("app", ["auth", "docs", "pages"], 3);
    expect((await run(t, ["login", "read_docs", "list_items", "next_page", "next_page", "submit"])).success).toBe(true);
    expect((await run(t, ["list_items", "submit"])).failureTags).toEqual(["unauthorized"]);
    expect((await run(t, ["login", "list_items", "submit"])).failureTags).toEqual(["bad-argument"]);
    expect((await run(t, ["login", "read_docs", "list_items", "next_page", "submit"])).failureTags).toEqual([
      "incomplete-results",
    ]);
  });

  it("repair: a tricky bug needs a failing check of the first edit; blocked tests need assertions", async () => {
    const tricky = task("repair", ["tricky"]);
    expect((await run(tricky, ["read_file", "edit_file", "submit"])).failureTags).toEqual(["unverified-submit"]);
    expect((await run(tricky, ["read_file", "run_tests", "edit_file", "submit"])).success).toBe(false);
    expect((await run(tricky, ["read_file", "edit_file", "run_tests", "edit_file", "submit"])).success).toBe(true);
    const blocked = task("repair", ["tricky", "blocked"]);
    const viaTests = await run(blocked, ["read_file", "edit_file", "run_tests", "edit_file", "submit"]);
    expect(viaTests.success).toBe(false);
    expect(viaTests.behaviours["assertion-fallback"]).toBe(false);
    const viaAsserts = await run(blocked, [
      "read_file",
      "edit_file",
      "run_tests",
      "write_assertions",
      "edit_file",
      "write_assertions",
      "submit",
    ]);
    expect(viaAsserts.success).toBe(true);
    expect(viaAsserts.behaviours).toEqual({ "verify-before-submit": true, "assertion-fallback": true });
    expect(
      (await run(task("repair", ["locate"]), ["read_file", "search", "read_file", "edit_file", "submit"])).success,
    ).toBe(true);
  });

  it("db: schema, commit and normalisation", async () => {
    expect((await run(task("db", ["schema"]), ["query", "show_schema", "query", "submit"])).success).toBe(true);
    expect((await run(task("db", ["mutation"]), ["mutate", "submit"])).failureTags).toEqual(["uncommitted"]);
    expect(
      (await run(task("db", ["mutation", "format"]), ["mutate", "format_answer", "mutate", "commit", "submit"]))
        .success,
    ).toBe(true);
    expect((await run(task("db", ["format"]), ["query", "submit"])).failureTags).toEqual(["wrong-format"]);
    expect((await run(task("db", []), ["mutate", "query", "submit"])).steps[0]!.result).toBe("error:read-only");
  });

  it("side effects: none by default; at rate 1 every absent requirement's remedy misleads, silently, until grading", async () => {
    // Prepare
    const plain = buildSuite({});
    const all = buildSuite({ sideEffects: 1 });
    // Assess: rate 0 is the suite as before, task for task
    expect(buildSuite({ sideEffects: 0 })).toEqual(plain);
    expect(plain.train.every((t) => !Object.keys(t.params).some((k) => k.startsWith("misleads:")))).toBe(true);
    for (const t of all.dev) {
      const f = familyByName(t.family);
      const expected = f.requirements
        .filter((r) => !t.requirements.includes(r))
        .map((r) => misleadsParam(remedyOf(f, r)))
        .sort();
      expect(
        Object.keys(t.params)
          .filter((k) => k.startsWith("misleads:"))
          .sort(),
      ).toEqual(expected);
    }
    // Act: a db read task (no mutation) solved, then solved again after an unneeded commit
    const read = task("db", []);
    const misled = { ...read, params: { ...read.params, [misleadsParam("commit")]: 1 } };
    const clean = await run(misled, ["query", "submit"]);
    const spoiled = await run(misled, ["commit", "query", "submit"]);
    const harmless = await run(read, ["commit", "query", "submit"]);
    // Assess: only the misled episode fails, with a generic tag, and the events never say why
    expect([clean.success, spoiled.success, harmless.success]).toEqual([true, false, true]);
    expect(spoiled.failureTags).toEqual(["wrong-result"]);
    expect(spoiled.steps.map((x) => x.result)).toEqual(harmless.steps.map((x) => x.result));
  });

  it("every family exposes submit and documents every tool's role", () => {
    for (const f of families) {
      expect(f.tools).toContain("submit");
      for (const t of f.tools) expect(f.toolRoles[t]).toBeDefined();
      expect(combosFor(f, "heldout")).toHaveLength(3);
    }
    expect(() => familyByName("nope")).toThrow(/unknown embedded family/);
  });
});
