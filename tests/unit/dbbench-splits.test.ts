import { describe, expect, it } from "vitest";
import {
  BUNDLED_DATA_DIR,
  SqliteEngine,
  dbbenchExperimentBase,
  dbbenchPool,
  dbbenchTaskSets,
  drawSplits,
  loadSplit,
  readSplits,
} from "@harness-s/dbbench";

describe("DBBench's fixed splits (data/splits.json)", () => {
  it("are what the rule draws from the bundled rows, written with the rule", async () => {
    const [standard, dev] = await Promise.all([
      loadSplit(BUNDLED_DATA_DIR, "standard"),
      loadSplit(BUNDLED_DATA_DIR, "dev"),
    ]);
    expect(await readSplits(BUNDLED_DATA_DIR)).toEqual(drawSplits(standard, dev));
  });

  it("hold out a third of each type of standard, disjoint from train; validation is a quarter of each type of train; dev is dev.jsonl", async () => {
    const standard = await loadSplit(BUNDLED_DATA_DIR, "standard");
    const s = await readSplits(BUNDLED_DATA_DIR);
    const typeOf = new Map(standard.map((r) => [r.id, r.type[0]!]));
    const count = (ids: string[]) => {
      const c: Record<string, number> = {};
      for (const id of ids) c[typeOf.get(id)!] = (c[typeOf.get(id)!] ?? 0) + 1;
      return c;
    };
    const all = count(standard.map((r) => r.id));
    const held = count(s.heldout);
    for (const [type, n] of Object.entries(all)) expect(held[type], type).toBe(Math.ceil(n / 3));
    expect(new Set([...s.train, ...s.heldout]).size).toBe(standard.length);
    expect(s.train.filter((id) => s.heldout.includes(id))).toEqual([]);
    const train = count(s.train);
    const validation = count(s.validation);
    for (const [type, n] of Object.entries(train)) expect(validation[type], type).toBe(Math.ceil(n / 4));
    expect(s.validation.every((id) => s.train.includes(id))).toBe(true);
    expect(s.dev).toHaveLength(60);
  });

  it("the validation protocol's task sets hold no held-out row anywhere (train, dev, evaluation, the environment's rows)", async () => {
    const s = await readSplits(BUNDLED_DATA_DIR);
    const held = new Set(s.heldout);
    const v = await dbbenchTaskSets(BUNDLED_DATA_DIR, "validation");
    expect([...v.train, ...v.dev, ...v.heldout].filter((t) => held.has(t.id))).toEqual([]);
    expect(v.rows.filter((r) => held.has(r.id))).toEqual([]);
    expect(v.heldout.map((t) => t.id)).toEqual(s.validation);
    const t = await dbbenchTaskSets(BUNDLED_DATA_DIR, "test");
    expect(t.heldout.map((x) => x.id)).toEqual(s.heldout);
    expect(t.train.map((x) => x.split)).toEqual(t.train.map(() => "train"));
    expect(t.dev.every((x) => x.id.startsWith("dev-") && x.split === "dev")).toBe(true);
  });

  it("an experiment's DBBench instance: dev (profiles, re-anchoring, evolution) holds dev rows only, and no held-out row is in train or dev", async () => {
    const s = await readSplits(BUNDLED_DATA_DIR);
    const held = new Set(s.heldout);
    const base = await dbbenchExperimentBase(new SqliteEngine(), "test", await dbbenchPool());
    const inst = await base.instance(1);
    expect(inst.dev.every((t) => t.id.startsWith("dev-"))).toBe(true);
    expect([...inst.train, ...inst.dev].filter((t) => held.has(t.id))).toEqual([]);
    expect(inst.heldout.map((t) => t.id)).toEqual(s.heldout);
    expect(inst.evolution.pool.siblings.map((x) => x.id)).toContain("dbbench-answer-gate");
  });
});
