import { createRng, hash32, rolloutsIn, systemClock } from "@harness-s/core";
import { reanchor } from "@harness-s/core/profile";
import type { ExperimentDeps, SeedInstance } from "@harness-s/core/experiment";
import {
  TokenPolicyClient,
  TokenTrainer,
  seedOfUnit,
  tokenUnitPolicies,
  workerPolicyId,
  type SharedTokenPolicyOptions,
} from "@harness-s/adapters/policy";
import { embeddedRendering, type FamilyRendering } from "@harness-s/envs";
import type { ProfileSet } from "@harness-s/core/profile";

/**
 * Where a run's policy worker reports what it spent (GPU seconds, tokens sampled and trained): the stack's
 * cost-of-goods meter.
 */
export type UsageReport = (used: {
  gpuSeconds?: number;
  sampledTokens?: number;
  trainedTokens?: number;
  generatedTokens?: number;
}) => void;

export interface WorkerPolicyOptions {
  url: string;
  token?: string;
  /** What the worker serves (`tiny`, or the model directory's name); recorded on each policy. */
  model: string;
  learningRate?: number;
  maxTokens?: number;
  /** Sample (and train) each turn as exactly one call of an offered tool (the worker's constrained sampler). */
  constrainToolCalls?: boolean;
  lora?: { rank: number; alpha: number; targets: string[] };
  /**
   * Hears what the worker reports (GPU seconds) and the tokens sampled and trained: the stack's cost-of-goods meter, in
   * the scope of the record that spent them.
   */
  onUsage?: UsageReport;
  /** Samples in flight at the worker at once (the client holds the rest back). */
  maxInFlight?: number;
  /**
   * What the policies' ids at the worker start with (default: one of this setup's own); a deployed run names its record
   * and attempt, so a later invocation's ids never meet an earlier one's.
   */
  run?: string;
  /**
   * Re-measure each seed's initial profiles with the token policy (a fresh, untrained one) on the
   * dev tasks instead of keeping evolution's (measured with the embedded policy). `saved` and
   * `save` keep them across a resumed run.
   */
  profiles?: {
    saved: (seed: number) => Promise<ProfileSet | undefined>;
    save: (seed: number, profiles: ProfileSet) => Promise<void>;
    /**
     * Rollouts the measurement may spend per seed (default: every dev task under H0, and every sibling where H0
     * failed).
     */
    budget?: number;
  };
}

export type WorkerDeps = Omit<ExperimentDeps, "onProgress"> & { sampled: TokenPolicyClient["sampled"] };

/** How an environment is shown to a token policy: its system text, tools and the environment the episode runs in. */
export type TokenRendering = FamilyRendering;

/**
 * The embedded setup with its policies at a protocol-v2 worker: the suite's text rendering
 * (tools as JSON schemas, events and facts as text, harness notes and hints as messages) and one
 * fresh LoRA policy per unit (arm and seed; the same seed gives the same initial adapter). Unit
 * policies are saved at the worker after every step and released when their unit ends, so a run
 * whose worker died continues (`--resume`) on a fresh worker started on the same `--state-dir`.
 * The sibling pools are evolved and frozen with the embedded policy, before any training; with
 * `profiles`, their initial profiles are then measured with the token policy.
 *
 * @example
 * const deps = workerPolicySetup(embeddedSetup(settings), { url: "http://127.0.0.1:8765", model: "tiny" });
 */
export function workerPolicySetup(
  base: Omit<ExperimentDeps, "onProgress">,
  opts: WorkerPolicyOptions,
  rendering: TokenRendering = embeddedRendering,
): WorkerDeps {
  const meter = opts.onUsage;
  const client = new TokenPolicyClient(opts.url, {
    token: opts.token,
    clock: systemClock,
    maxInFlight: opts.maxInFlight,
    ...(meter ? { onDeviceSeconds: (s: number) => meter({ gpuSeconds: s }), onTokens: meter } : {}),
  });
  const run = workerPolicyId(opts.run ?? `run${Date.now().toString(36)}`);
  const shared: SharedTokenPolicyOptions = {
    baseModel: opts.model,
    lora: opts.lora ?? { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj", "lm_head"] },
    system: rendering.system,
    toolSchemas: rendering.toolSchemas,
    ...(rendering.toolNames ? { toolNames: rendering.toolNames } : {}),
    maxTokens: opts.maxTokens ?? 24,
    learningRate: opts.learningRate,
    ...(opts.constrainToolCalls ? { constrainToolCalls: true } : {}),
  };
  let n = 0;
  const env = rendering.env(base.env);
  const createPolicy = (seed: number) =>
    new TokenTrainer(client, { ...shared, policyId: `${run}-${++n}-s${seed}`, seed });
  const measured = new Map<number, Promise<SeedInstance>>();
  const withTokenProfiles = async (seed: number): Promise<SeedInstance> => {
    const inst = await base.instance(seed);
    const initialProfiles = (await opts.profiles!.saved(seed)) ?? (await measureProfiles(inst, seed));
    await opts.profiles!.save(seed, initialProfiles);
    return { ...inst, evolution: { ...inst.evolution, initialProfiles } };
  };
  const measureProfiles = async (inst: SeedInstance, seed: number): Promise<ProfileSet> => {
    const policy = createPolicy(seed);
    const { pool } = inst.evolution;
    const probe = await reanchor({
      probeTasks: inst.dev,
      pool,
      profiles: {},
      budget: opts.profiles?.budget ?? inst.dev.length * (1 + pool.siblings.length),
      keep: 0,
      policyVersion: 0,
      step: 0,
      rng: createRng(hash32("token-profiles", seed)),
      runRollout: rolloutsIn(env, policy),
    });
    await policy.release();
    return probe.profiles;
  };
  return {
    ...base,
    env,
    createPolicy,
    instance: opts.profiles
      ? (seed) => {
          if (!measured.has(seed)) measured.set(seed, withTokenProfiles(seed));
          return measured.get(seed)!;
        }
      : base.instance,
    policies: tokenUnitPolicies(client, (unit) => `${run}-${unit}`, shared, seedOfUnit),
    sampled: client.sampled,
    // The worker batches what it is sent at once; the voters here are the statistical ones.
    speculateRescues: true,
  };
}
