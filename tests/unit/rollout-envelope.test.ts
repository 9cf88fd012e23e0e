import { describe, expect, it } from "vitest";
import { createPool, systemClock } from "@harness-s/core";
import { Envelope, envelope } from "@harness-s/core/messaging";
import { queuedRolloutRunner } from "@harness-s/core/experiment";
import { RescueRequest, startRescue } from "@harness-s/core/rescue";
import {
  MemoryDecisionStore,
  MemoryPoolStore,
  MemoryProfileStore,
  MemoryQueue,
  MemoryRescueJobStore,
  MemoryRolloutStore,
} from "@harness-s/adapters/stores";
import { statisticalVoters } from "@harness-s/core/voting";
import { idleCallerPolicies, makeSpec, makeTask } from "../factories.ts";

// Issue 53, item 2: a rollout message names where it samples once (`source`): a caller's weight
// version, endpoint, environment and task travel once, beside no policy id or version of the
// service's; a body of the shape before `source` is read into it, or refused where its two
// versions disagree.
const task = makeTask({ id: "t1" });
const callers = idleCallerPolicies(7);
const callerRescue = {
  endpoint: "mine",
  environment: { kind: "openenv", url: "https://env.example.com/" },
  task: { id: "t1", family: "app", tools: [{ name: "submit", submit: true }] },
};

/** The messages a rescue sends, as a worker reads them off the queue. */
async function sentBy(input: Record<string, unknown>): Promise<{ raw: string; parsed: Envelope }[]> {
  const pools = new MemoryPoolStore();
  await pools.put(
    createPool("p", makeSpec({ id: "h0" }), [makeSpec({ id: "sib-a", provenance: { direction: "contract" } })]),
  );
  const dispatch = new MemoryQueue();
  const deps = {
    pools,
    profiles: new MemoryProfileStore(),
    decisions: new MemoryDecisionStore(),
    voters: statisticalVoters,
    clock: systemClock,
    newId: () => "d1",
    tasks: { get: async (id: string) => (id === task.id ? task : undefined) },
    jobs: new MemoryRescueJobStore(),
    dispatch,
    callers,
  };
  await startRescue(
    RescueRequest.parse({ poolId: "p", taskId: "t1", harnesses: ["h0"], rolloutsPerHarness: 2, ...input }),
    deps,
    "k1",
  );
  return dispatch.take().map((m) => {
    const raw = JSON.stringify(m);
    return { raw, parsed: Envelope.parse(JSON.parse(raw)) };
  });
}

/** How often `key` is a key in JSON `text`. */
const occurrences = (text: string, key: string) => text.split(`"${key}":`).length - 1;

describe("the rollout.requested message", () => {
  it("of a caller's rescue carries its weight version, endpoint, environment and task once, and no policy of the service's", async () => {
    const sent = await sentBy({ caller: callerRescue });
    expect(sent).toHaveLength(2);
    for (const { raw, parsed } of sent) {
      for (const once of ["weightVersion", "endpoint", "environment", "task", "tools", "source"])
        expect(occurrences(raw, once)).toBe(1);
      for (const never of ["policyVersion", "policyId", "caller"]) expect(occurrences(raw, never)).toBe(0);
      expect(parsed.type === "rollout.requested" && parsed.body.source).toMatchObject({
        kind: "caller",
        keyId: "k1",
        endpoint: "mine",
        weightVersion: 7,
      });
    }
  });

  it("of the service's own rescue and of an experiment names the policy and its version once", async () => {
    const [rescue] = await sentBy({});
    expect(rescue!.parsed.type === "rollout.requested" && rescue!.parsed.body.source).toEqual({
      kind: "service",
      policyId: "default",
    });
    expect(occurrences(rescue!.raw, "weightVersion")).toBe(0);
    const dispatch = new MemoryQueue();
    const run = queuedRolloutRunner({
      jobId: "j",
      policyId: "exp/1/grpo",
      poolId: "p",
      policyVersion: () => 4,
      dispatch,
      rollouts: new MemoryRolloutStore(),
      clock: systemClock,
      timeoutMs: 1,
    });
    await run(task, makeSpec(), 1).catch(() => undefined);
    const raw = JSON.stringify(dispatch.take()[0]);
    expect(JSON.parse(raw).body.source).toEqual({ kind: "service", policyId: "exp/1/grpo", version: 4 });
    expect([occurrences(raw, "version"), occurrences(raw, "policyVersion"), occurrences(raw, "policyId")]).toEqual([
      1, 0, 1,
    ]);
  });

  it("refuses a source beside the fields it replaced", () => {
    const body = {
      jobId: "j",
      index: 0,
      poolId: "p",
      harnessId: "h0",
      taskId: "t1",
      seed: 1,
      source: { kind: "service", policyId: "default" },
    };
    expect(Envelope.safeParse(envelope("rollout.requested", "j:0", body as never)).success).toBe(true);
    for (const extra of [{ policyVersion: 3 }, { policyId: "default" }, { caller: callerRescue }])
      expect(
        Envelope.safeParse({ ...envelope("rollout.requested", "j:0", body as never), body: { ...body, ...extra } })
          .success,
      ).toBe(false);
  });
});

describe("a rollout message queued before the source (a deploy's messages in flight)", () => {
  const head = { v: 1, id: "rsc_1:0", type: "rollout.requested" } as const;
  const old = {
    jobId: "rsc_1",
    index: 0,
    poolId: "p",
    harnessId: "h0",
    taskId: "t1",
    seed: 1,
    policyId: "default",
    rescueJob: true,
  };
  const caller = {
    ...callerRescue,
    environment: { kind: "openenv", url: "https://env.example.com/" },
    keyId: "k1",
    weightVersion: 7,
  };

  it("is read as the source it named: the caller's (one weight version), or the service's policy at its version", () => {
    const read = Envelope.parse({ ...head, body: { ...old, caller, policyVersion: 7, task } });
    expect(read.type === "rollout.requested" && read.body.source).toMatchObject({
      kind: "caller",
      endpoint: "mine",
      weightVersion: 7,
    });
    expect(occurrences(JSON.stringify(read), "weightVersion")).toBe(1);
    expect(occurrences(JSON.stringify(read), "policyVersion")).toBe(0);
    const service = Envelope.parse({ ...head, body: { ...old, policyId: "exp/1/grpo", policyVersion: 2 } });
    expect(service.type === "rollout.requested" && service.body.source).toEqual({
      kind: "service",
      policyId: "exp/1/grpo",
      version: 2,
    });
  });

  it("is refused, not misread, where its two versions disagree", () => {
    const read = Envelope.safeParse({ ...head, body: { ...old, caller, policyVersion: 6 } });
    expect(read.success).toBe(false);
    expect(read.error?.issues.map((i) => i.code)).toEqual(expect.arrayContaining(["unrecognized_keys"]));
  });
});
