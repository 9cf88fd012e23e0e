import { describe, expect, it } from "vitest";
import { blendProfiles, createPool, createRng, reanchor, type HarnessSpec, type Task } from "@harness-s/core";
import { makeProfile, makeRollout, makeSpec, makeTask } from "../factories.ts";

const siblings = ["sib-a", "sib-b", "sib-c"].map((id) => makeSpec({ id, provenance: { direction: "contract" } }));
const pool = createPool("p", makeSpec(), siblings);
const tasks = Array.from({ length: 10 }, (_, i) => makeTask({ id: `t${i}` }));

function runner(h0Succeeds: (t: Task) => boolean) {
  let calls = 0;
  const run = async (task: Task, h: HarnessSpec, seed: number) => {
    calls++;
    const success = h.id === "h0" ? h0Succeeds(task) : h.id === "sib-b";
    return makeRollout({ taskId: task.id, harnessId: h.id, seed, success, reward: success ? 1 : 0 });
  };
  return { run, calls: () => calls };
}

describe("reanchor", () => {
  it("never spends more than its budget and reports exactly what it spent", async () => {
    for (const budget of [0, 1, 3, 4, 9, 17, 40]) {
      const r = runner(() => false);
      const out = await reanchor({ probeTasks: tasks, pool, profiles: {}, budget, keep: 0.5, policyVersion: 3, step: 5, rng: createRng(1), runRollout: r.run });
      expect(out.spent).toBe(r.calls());
      expect(out.spent).toBeLessThanOrEqual(budget);
    }
  });

  it("spends one rollout per task when H0 succeeds, and 1 + siblings when it fails", async () => {
    const ok = runner(() => true);
    const a = await reanchor({ probeTasks: tasks, pool, profiles: {}, budget: 100, keep: 0.5, policyVersion: 1, step: 1, rng: createRng(1), runRollout: ok.run });
    expect(a.spent).toBe(10);
    const bad = runner(() => false);
    const b = await reanchor({ probeTasks: tasks, pool, profiles: {}, budget: 8, keep: 0.5, policyVersion: 1, step: 1, rng: createRng(1), runRollout: bad.run });
    expect(b.spent).toBe(8);
    expect(b.probedTasks).toBe(2);
  });

  it("measures fresh rescue utility and stamps the profiles with the policy version", async () => {
    const r = runner(() => false);
    const out = await reanchor({ probeTasks: tasks, pool, profiles: {}, budget: 40, keep: 0.5, policyVersion: 7, step: 10, rng: createRng(1), runRollout: r.run });
    expect(out.utilities["sib-b"]).toBe(1);
    expect(out.utilities["sib-a"]).toBe(0);
    expect(out.profiles["sib-b"]!.policyVersion).toBe(7);
    expect(out.failing).toHaveLength(out.probedTasks);
  });

  it("probes last time's failures first", async () => {
    const order: string[] = [];
    const run = async (task: Task, h: HarnessSpec) => {
      if (h.id === "h0") order.push(task.id);
      return makeRollout({ taskId: task.id, harnessId: h.id, success: true, reward: 1 });
    };
    await reanchor({ probeTasks: tasks, pool, profiles: {}, budget: 3, keep: 0.5, policyVersion: 1, step: 1, rng: createRng(2), runRollout: run, priority: ["t7", "t3"] });
    expect(order.slice(0, 2).sort()).toEqual(["t3", "t7"]);
  });
});

describe("blendProfiles", () => {
  it("rescales old evidence only where fresh evidence exists", () => {
    const old = makeProfile("s", { byFailureTag: { "app/x": { attempts: 10, successes: 10 }, "app/y": { attempts: 4, successes: 0 } } });
    const fresh = makeProfile("s", { policyVersion: 5, byFailureTag: { "app/x": { attempts: 2, successes: 0 } } });
    const b = blendProfiles(old, fresh, 0.25);
    expect(b.byFailureTag["app/x"]).toEqual({ attempts: 4.5, successes: 2.5 });
    expect(b.byFailureTag["app/y"]).toEqual({ attempts: 4, successes: 0 });
    expect(b.policyVersion).toBe(5);
  });
});
