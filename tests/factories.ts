import {
  createRng,
  parseHarnessSpec,
  runEpisode,
  type Policy,
  type HarnessSpec,
  type HarnessSpecInput,
  type Rollout,
  type Task,
  type HarnessPool,
} from "@harness-s/core";
import { emptyProfile, type Profile } from "@harness-s/core/profile";
import type { ExperimentDeps, SeedInstance, ArmSeedResult, ExperimentSummary } from "@harness-s/core/experiment";
import type { TrainDeps } from "@harness-s/core/training";
import type { Envelope } from "@harness-s/core/messaging";
import type { CallerPolicies } from "@harness-s/core/dispatch";

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

/** A per-(arm, seed) result with the given H0 held-out Avg@3 per family; other fields minimal. */
export function makeArmSeed(
  seed: number,
  heldoutByFamily: Record<string, number>,
  heldoutByCombination: Record<string, number> = {},
): ArmSeedResult {
  const score = (avg: number) => ({ passAt3: avg, avgAt3: avg });
  const values = Object.values(heldoutByFamily);
  const avg = values.reduce((s, v) => s + v, 0) / Math.max(1, values.length);
  return {
    seed,
    rollouts: 100,
    rolloutBreakdown: { train: 100, rescue: 0, resample: 0, reanchor: 0 },
    h0: { train: score(avg), heldout: score(avg) },
    byFamily: {
      train: {},
      heldout: Object.fromEntries(Object.entries(heldoutByFamily).map(([f, v]) => [f, score(v)])),
    },
    byCombination: { heldout: Object.fromEntries(Object.entries(heldoutByCombination).map(([c, v]) => [c, score(v)])) },
    behaviours: {},
    rescue: { triggered: 0, replaced: 0, dropped: 0, allFailGroups: 0, groups: 0 },
    curve: [],
    utilities: [],
    siblingDirections: {},
    chosenCounts: {},
  };
}

/** An experiment summary over the given arms (per-seed results), with neutral suite figures. */
export function makeSummary(arms: Record<string, ArmSeedResult[]>): ExperimentSummary {
  const score = { passAt3: 0, avgAt3: 0 };
  const seeds = [...new Set(Object.values(arms).flatMap((runs) => runs.map((r) => r.seed)))];
  return {
    seeds,
    config: {},
    poolVersions: {},
    initial: { train: score, heldout: score, rank1: { heldout: score }, behaviours: {} },
    initialPerSeed: [],
    arms: Object.entries(arms).map(([name, perSeed]) => ({
      name,
      rollouts: 100,
      h0: { train: score, heldout: score },
      perSeed,
    })),
    suite: { locality: 0, complementarity: 1, nonstationarity: 0, details: {} },
  };
}

/** trainArm's dependencies for one embedded instance, with rollouts run in process by `policy`. */
export function makeTrainDeps(
  setup: Pick<ExperimentDeps, "env" | "voters">,
  instance: SeedInstance,
  policy: Policy,
  seed: number,
): TrainDeps {
  return {
    policy,
    runRollout: (t, h, s) => runEpisode(t, h, s, { env: setup.env, policy }),
    pool: instance.evolution.pool,
    trainTasks: instance.train,
    probeTasks: instance.dev,
    initialProfiles: instance.evolution.initialProfiles,
    probePriority: instance.evolution.h0Failures,
    voters: setup.voters,
    rng: createRng(seed),
  };
}

/** An SQS event record carrying one queue message, as a Lambda handler receives it (on its `receive`th delivery). */
export function makeSqsRecord(messageId: string, message: Envelope, receive = 1) {
  return {
    messageId,
    receiptHandle: "r",
    attributes: { ApproximateReceiveCount: String(receive) },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn",
    awsRegion: "us-east-1",
    body: JSON.stringify(message),
  };
}

/** The SQS event of the dispatch queue delivering `envelopes` (records m0, m1, …). */
export const makeSqsEvent = (envelopes: Envelope[], receive = 1) => ({
  Records: envelopes.map((e, i) => makeSqsRecord(`m${i}`, e, receive)),
});

/** A `ballot.requested` message for `voterId` on a pool's siblings (key `key`), with its payer when given. */
export function ballotEnvelope(pool: HarnessPool, key: string, voterId: string, payer?: Envelope["payer"]): Envelope {
  return {
    v: 1,
    id: `${key}:${voterId}`,
    type: "ballot.requested",
    body: {
      ballotKey: key,
      decisionId: "d1",
      voterId,
      task: { id: "t", family: "app", tags: [] },
      failureTags: ["x"],
      failedEvents: [],
      candidates: pool.siblings,
      profiles: {},
      k: 1,
    },
    ...(payer ? { payer } : {}),
  };
}

/** Caller policies for a rescue that is started but never run: the endpoint holds `version`. */
export function idleCallerPolicies(version: number): CallerPolicies {
  return {
    runner: () => Promise.reject(new Error("nothing runs here")),
    datums: async () => [],
    currentVersion: async () => version,
    checkEnvironment: async () => undefined,
    checkEndpoint: async () => undefined,
  };
}

/**
 * A caller rescue slot's source for dispatch tests: key k-a's endpoint "mine" at version 0, on the built-in embedded
 * environment, one committing tool.
 */
export const callerSlotSource = {
  keyId: "k-a",
  endpoint: "mine",
  weightVersion: 0,
  environment: { kind: "builtin" as const, id: "embedded" as const },
  task: {
    id: "t1",
    family: "app",
    tags: [],
    instruction: "",
    tools: [{ name: "submit", description: "", parameters: {}, submit: true }],
    reset: {},
  },
  system: "",
  maxTokens: 8,
};
