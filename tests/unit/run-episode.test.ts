import { describe, expect, it } from "vitest";
import { createRng, runEpisode, type Policy, type PolicyObservation } from "@harness-s/core";
import { EmbeddedEnvironment, TextEnvironment } from "@harness-s/envs";
import { makeSpec, makeTask } from "../factories.ts";

/** A policy that plays a fixed script and records what it saw. */
function scripted(actions: string[]): Policy & { seen: PolicyObservation[] } {
  const seen: PolicyObservation[] = [];
  let i = 0;
  return {
    seen,
    version: () => 4,
    act: async (obs) => {
      seen.push(obs);
      return { action: actions[Math.min(i++, actions.length - 1)]!, logProb: -1 };
    },
    update: async () => ({ version: 5, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } }),
  };
}

const env = new EmbeddedEnvironment();
const paginated = makeTask({ requirements: ["pages"], params: { pages: 2 } });

describe("runEpisode", () => {
  it("grades the gold path as a success and records steps, events and the policy version", async () => {
    const r = await runEpisode(paginated, makeSpec(), 1, {
      env,
      policy: scripted(["list_items", "next_page", "submit"]),
    });
    expect(r.success).toBe(true);
    expect(r.reward).toBe(1);
    expect(r.policyVersion).toBe(4);
    expect(r.steps.map((s) => s.result)).toEqual(["page:more", "page:last", "submitted"]);
    expect(r.events).toEqual(["start", "page:more", "page:last", "submitted"]);
  });

  it("tags the failure and marks a rejected submit", async () => {
    const r = await runEpisode(paginated, makeSpec(), 1, { env, policy: scripted(["list_items", "submit"]) });
    expect(r.success).toBe(false);
    expect(r.failureTags).toEqual(["incomplete-results"]);
    expect(r.events.at(-1)).toBe("submit:rejected");
  });

  it("shows a trigger's hint after a matching event, no more often than maxFires", async () => {
    const h = makeSpec({
      id: "s",
      postObservation: [{ on: "page:*", hint: "next_page", maxFires: 1 }],
      provenance: { direction: "contract" },
    });
    const p = scripted(["list_items", "next_page", "next_page", "submit"]);
    await runEpisode(makeTask({ requirements: ["pages"], params: { pages: 3 } }), h, 1, { env, policy: p });
    expect(p.seen[1]!.event).toBe("page:more");
    expect(p.seen[1]!.hints).toEqual(["next_page"]);
    expect(p.seen[2]!.event).toBe("page:more");
    expect(p.seen[2]!.hints).toEqual([]);
  });

  it("keeps the task's own cues apart as the hints H0 would show", async () => {
    const task = makeTask({
      requirements: ["pages"],
      params: { pages: 2 },
      cues: [{ on: "page:more", hint: "next_page", text: "", priority: 0, maxFires: 3 }],
    });
    const h = makeSpec({
      id: "s",
      postObservation: [{ on: "page:more", hint: "refresh" }],
      provenance: { direction: "contract" },
    });
    const p = scripted(["list_items", "next_page", "submit"]);
    await runEpisode(task, h, 1, { env, policy: p });
    expect(p.seen[1]!.hints.sort()).toEqual(["next_page", "refresh"]);
    expect(p.seen[1]!.baseHints).toEqual(["next_page"]);
  });

  it("blocks a submit at the commit gate, spends the turn, hints, and marks the step intercepted", async () => {
    const h = makeSpec({
      id: "g",
      commitGate: { requires: ["listed"], hint: "list_items", maxBlocks: 1 },
      provenance: { direction: "verification" },
    });
    const p = scripted(["submit", "list_items", "submit"]);
    const r = await runEpisode(makeTask(), h, 1, { env, policy: p });
    expect(r.steps.map((s) => s.result)).toEqual(["gate:listed", "page:last", "submitted"]);
    expect(r.steps[0]!.intercepted).toBe(true);
    expect(p.seen[1]!.hints).toEqual(["list_items"]);
    expect(r.success).toBe(true);
  });

  it("lets a submit through once the gate has blocked maxBlocks times", async () => {
    const h = makeSpec({
      id: "g",
      commitGate: { requires: ["listed"], maxBlocks: 1 },
      provenance: { direction: "verification" },
    });
    const r = await runEpisode(makeTask(), h, 1, { env, policy: scripted(["submit", "submit"]) });
    expect(r.steps.map((s) => s.result)).toEqual(["gate:listed", "submitted"]);
  });

  it("a pre-action block stops the tool from running", async () => {
    const h = makeSpec({
      id: "p",
      preAction: [{ action: "next_page", requires: ["listed"], mode: "block", hint: "list_items", maxBlocks: 1 }],
      provenance: { direction: "pre-action" },
    });
    const r = await runEpisode(makeTask(), h, 1, { env, policy: scripted(["next_page", "list_items", "submit"]) });
    expect(r.steps[0]!.result).toBe("blocked:next_page");
    expect(r.success).toBe(true);
  });

  it("a warn-mode pre-action check lets the tool run and, for a text agent, says so under the next tool output; tool notes reach the observation", async () => {
    const h = makeSpec({
      id: "w",
      instruction: { toolNotes: { next_page: "pages come in order" } },
      preAction: [{ action: "next_page", requires: ["listed"], mode: "warn" }],
      provenance: { direction: "pre-action" },
    });
    const p = scripted(["next_page", "list_items", "submit"]);
    const r = await runEpisode(makeTask(), h, 1, { env: new TextEnvironment(env), policy: p });
    expect(r.steps[0]!.result).not.toMatch(/^blocked/);
    expect(p.seen[1]!.notes).toEqual(["Warning: next_page ran before listed."]);
    expect(p.seen[0]!.toolNotes).toEqual({ next_page: "pages come in order" });
    const plain = scripted(["next_page", "list_items", "submit"]);
    await runEpisode(makeTask(), h, 1, { env, policy: plain });
    expect(plain.seen[1]!.notes).toBeUndefined(); // the embedded (non-text) policy reads hints, not notes
  });

  it("warns, then forces a submit that is marked forced and carries no log-probability", async () => {
    const h = makeSpec({
      id: "b",
      budget: { maxTurns: 3, warnAt: 2, forceSubmitAt: 1 },
      provenance: { direction: "budget" },
    });
    const p = scripted(["list_items", "get_item", "get_item"]);
    const r = await runEpisode(makeTask(), h, 1, { env, policy: p });
    expect(p.seen[1]!.hints).toContain("submit");
    expect(r.steps.at(-1)).toMatchObject({ action: "submit", forced: true, logProb: 0 });
    expect(r.success).toBe(true);
  });

  it("ends with budget-exhausted when the agent never submits", async () => {
    const r = await runEpisode(makeTask(), makeSpec({ budget: { maxTurns: 2 } }), 1, {
      env,
      policy: scripted(["get_item"]),
    });
    expect(r.success).toBe(false);
    expect(r.failureTags).toContain("budget-exhausted");
    expect(r.events.at(-1)).toBe("budget:exhausted");
  });

  it("hints recon actions first, and loop-breaking triggers on repeats", async () => {
    const h = makeSpec({
      id: "r",
      recon: { first: ["read_docs"] },
      postObservation: [{ on: "repeat:2", hint: "submit" }],
      provenance: { direction: "recon" },
    });
    const p = scripted(["get_item", "get_item", "get_item", "submit"]);
    await runEpisode(makeTask(), h, 1, { env, policy: p });
    expect(p.seen[0]!.hints).toEqual(["read_docs"]);
    expect(p.seen[2]!.hints).toContain("submit");
  });

  it("records errors per action for the policy's failed-action penalty", async () => {
    const p = scripted(["list_items", "list_items", "submit"]);
    await runEpisode(makeTask({ requirements: ["auth"] }), makeSpec(), 1, { env, policy: p });
    expect(p.seen[1]!.failedActions).toEqual(["list_items"]);
  });

  it("is deterministic for a seed", async () => {
    const { LogLinearPolicy } = await import("@harness-s/policy");
    const { embeddedPolicyPrior } = await import("@harness-s/envs");
    const policy = new LogLinearPolicy({ prior: embeddedPolicyPrior() });
    const a = await runEpisode(paginated, makeSpec(), 42, { env, policy });
    const b = await runEpisode(paginated, makeSpec(), 42, { env, policy });
    expect(b).toEqual(a);
    expect(createRng(42).next()).toBe(createRng(42).next());
  });
});
