import {
  emptyProfile,
  parseHarnessSpec,
  type HarnessSpec,
  type HarnessSpecInput,
  type Profile,
  type Rollout,
  type Task,
} from "@harness-s/core";

/** A valid task; override what the test is about. */
export function makeTask(over: Partial<Task> = {}): Task {
  return {
    id: "task-1",
    family: "app",
    split: "train",
    instruction: "list the items",
    tags: ["app"],
    requirements: [],
    cues: [],
    params: { pages: 1 },
    ...over,
  };
}

export function makeSpec(over: Partial<HarnessSpecInput> = {}): HarnessSpec {
  return parseHarnessSpec({ id: "h0", budget: { maxTurns: 10 }, provenance: { direction: "base" }, ...over });
}

export function makeRollout(over: Partial<Rollout> = {}): Rollout {
  return {
    id: "r",
    taskId: "task-1",
    family: "app",
    harnessId: "h0",
    policyVersion: 0,
    seed: 1,
    steps: [],
    reward: 0,
    success: false,
    failureTags: ["incomplete-results"],
    events: ["start", "page:more"],
    behaviours: {},
    ...over,
  };
}

export function makeProfile(harnessId: string, over: Partial<Profile> = {}): Profile {
  return { ...emptyProfile(harnessId, 0), ...over };
}
