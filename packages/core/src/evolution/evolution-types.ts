import { z } from "zod";
import { Direction, type HarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import type { Rng } from "../util/rng.ts";
import type { Proposer } from "./proposer.ts";

export const EvolutionConfig = z.object({
  directions: z
    .array(Direction.exclude(["base"]))
    .default([
      "contract",
      "recon",
      "pre-action",
      "recovery",
      "loop-breaking",
      "verification",
      "budget",
      "decomposition",
    ]),
  rounds: z.number().int().min(1).default(5),
  candidatesPerRound: z.number().int().min(1).default(10),
  trials: z.number().int().min(1).default(4),
  /** A task counts as repaired when the sibling's success rate beats H0's by this much. */
  repairMargin: z.number().min(0).max(1).default(0.5),
  minRepairs: z.number().int().min(1).default(2),
  /** Least gain in the continuous score for a round's best proposal to replace its parent (0 allows neutral drift). */
  minGain: z.number().min(0).default(0),
  poolSize: z.number().int().min(1).default(8),
  maxPerDirection: z.number().int().min(1).default(2),
  /**
   * GEPA-style screen: a candidate is first measured on this many dev tasks (the parent's
   * failures first) and measured on every dev task only when it repairs one of them. None: every
   * candidate is measured on every dev task.
   */
  screenTasks: z.number().int().min(1).optional(),
  /**
   * Rollouts evolution may spend in all (H0's measurement included); none: no cap. Evolution stops cleanly when the
   * next measurement would pass it.
   */
  maxRollouts: z.number().int().min(1).optional(),
});
export type EvolutionConfig = z.infer<typeof EvolutionConfig>;

export interface CandidateRecord {
  spec: HarnessSpec;
  repairs: string[];
  breaks: string[];
  score: number;
  kept: boolean;
}

export interface EvolutionDeps {
  base: HarnessSpec;
  devTasks: readonly Task[];
  runRollout: RolloutRunner;
  proposer: Proposer;
  vocabulary: (family: string) => { tools: string[]; facts: string[]; roles: Record<string, string> };
  rng: Rng;
  onProgress?: (done: number, total: number) => void;
}

/** Why evolution stopped before its last round, when it did. */
export type EvolutionStop = "rollout budget spent" | "proposer budget spent";

export interface Measured {
  rates: Map<string, number>;
  rollouts: Rollout[];
}
