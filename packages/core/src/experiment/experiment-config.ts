import { z } from "zod";
import { ArmList, defaultArmNames } from "./arms.ts";
import type { EvolutionResult } from "../evolution/evolve.ts";
import type { Environment, Policy, RolloutRunner } from "../ports.ts";
import { Protocol, type Task } from "../task.ts";
import { TrainConfig } from "../training/config.ts";
import type { StepRecord } from "../training/train-state.ts";
import type { Voter } from "../voting/ballot.ts";
import type { PanelSettings } from "../voting/panel.ts";
import type { ArmSeedResult, ExperimentSummary, SeedBaseline } from "./summary.ts";
import type { UnitCheckpoint, UnitPolicies } from "./unit-policies.ts";

export const ExperimentConfig = z.object({
  seeds: z.array(z.number().int()).min(1).default([1, 2, 3, 4, 5]),
  /** Registered arms (see `registerArm`); default every one registered `byDefault`. */
  arms: ArmList.default(() => defaultArmNames()),
  train: TrainConfig.default(TrainConfig.parse({})),
  evalSamples: z.number().int().min(3).default(6),
  singleVoter: z.string().default("failure-tag-evidence"),
  /**
   * What the instances' `heldout` slot holds: the test split, or (under "validation") a split of
   * train-side tasks held back for tuning. Recorded so reports label it and pooling refuses a mix.
   */
  protocol: Protocol.default("test"),
  /**
   * Evaluate at most this many tasks per split (evenly spaced); default every task. For slow
   * policies (an LLM through the policy worker on CPU); headline runs evaluate every task.
   */
  evalTasks: z.number().int().min(1).optional(),
});
export type ExperimentConfig = z.infer<typeof ExperimentConfig>;

/** One benchmark instance: its task splits and the sibling pool evolved (and frozen) on its dev split. */
export interface SeedInstance {
  train: readonly Task[];
  dev: readonly Task[];
  heldout: readonly Task[];
  evolution: EvolutionResult;
}

export interface ExperimentDeps {
  env: Environment;
  createPolicy: (seed: number) => Policy;
  voters: readonly Voter[];
  /**
   * A voter panel's weights, quorum, fallback and deadlines (`experiment --voters`). Not with `speculateRescues`: a
   * panel's voters cost tokens.
   */
  panel?: PanelSettings;
  /** The instance a seed runs on: its own (independent replicates) or one shared by every seed. */
  instance: (seed: number) => Promise<SeedInstance>;
  onProgress?: (event: { seed: number; arm: string; step: number; steps: number; record: StepRecord }) => void;
  /**
   * How rollouts of one policy are run: in process by default; through the dispatch queue in
   * the local-aws and cloud runtimes. `policyId` is `initial/<seed>` or `<arm>/<seed>`.
   */
  runnerFor?: (policyId: string, policy: Policy, seed: number) => RolloutRunner;
  /**
   * A section the run's report ends with (a family's own: DBBench's AgentBench accuracies), from its summary, baselines
   * and evaluated held-out tasks.
   */
  reportSection?: (
    summary: ExperimentSummary,
    baselines: readonly SeedBaseline[],
    evaluated: readonly Task[],
  ) => string;
  /**
   * Start each step's rescues at once (see `TrainDeps.speculate`): for a batching policy endpoint with voters that cost
   * nothing.
   */
  speculateRescues?: boolean;
  /** Called when one arm of one seed is trained and evaluated (partial results survive a stop). */
  onArmSeed?: (arm: string, result: ArmSeedResult) => void | Promise<void>;
  /** Called when a seed's initial policy has been evaluated (kept for a resumed attempt). */
  onSeedBaseline?: (baseline: SeedBaseline) => void | Promise<void>;
  /**
   * What an earlier attempt of the same run finished: those seeds' baselines and (arm, seed)
   * results are reused, not re-run. Runs are deterministic per seed, so the summary is the same.
   */
  resume?: {
    baselines: readonly SeedBaseline[];
    results: readonly { arm: string; result: ArmSeedResult }[];
    units?: readonly UnitCheckpoint[];
  };
  /**
   * Policies that outlive an attempt (at a policy endpoint), so a unit can continue mid-way: with
   * them, a time slice may also end between two training steps, and {@link onUnitStep} gets
   * a checkpoint after every step. Without them, units are the smallest piece of work.
   */
  policies?: UnitPolicies;
  /** Called after every training step of a unit when {@link policies} is given. */
  onUnitStep?: (checkpoint: UnitCheckpoint) => void | Promise<void>;
  /**
   * Asked before each (arm, seed) after the first this attempt trains, and (with
   * {@link policies}) after each training step; true ends the attempt, which then returns
   * `{ kind: "paused" }`. Every attempt makes progress: at least a unit, or with policies at
   * least a step.
   */
  shouldYield?: () => boolean;
  /**
   * Asked before each (arm, seed) unit and after each training step; a reason ends the attempt
   * there with `{ kind: "stopped" }` (the unit in progress is not kept unless its policy outlives
   * the attempt, whose step checkpoint is then saved first). How a cancelled run stops.
   */
  shouldStop?: () => StopReason | undefined;
}

/** Why a run stopped before its end: cancelled by its owner, or its budget cap reached. */
export const StopReason = z.object({ kind: z.enum(["cancelled", "budget"]), detail: z.string() });
export type StopReason = z.infer<typeof StopReason>;
