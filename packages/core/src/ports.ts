import type { UpdateSettings } from "./rollout/update-settings.ts";
import type { HarnessSpec } from "./harness/spec.ts";
import type { PolicyObservation, Rollout, StepTokens } from "./rollout/types.ts";
import type { Task } from "./task.ts";
import type { Rng } from "./util/rng.ts";

/** What an environment answers to one action. */
export interface EnvStep {
  event: string;
  facts: string[];
  done: boolean;
  /** What a text agent reads (a tool's output); absent in symbolic environments. */
  text?: string;
}

/** The end of an episode, as the environment grades it. */
export interface EnvOutcome {
  reward: number;
  success: boolean;
  failureTags: string[];
  behaviours: Record<string, boolean>;
}

/** One live episode. `finish` is called once, whether or not the agent submitted. */
export interface EnvSession {
  readonly initial: EnvStep;
  /** Runs one tool; `args` are the tool call's arguments (text environments). */
  act(action: string, args?: Record<string, unknown>): Promise<EnvStep>;
  /** Grades the episode; `args` are the submit call's arguments (e.g. the answers). */
  finish(reason: "submitted" | "budget-exhausted", args?: Record<string, unknown>): Promise<EnvOutcome>;
  /** Text for a harness's named preview (e.g. "schema") shown in the first observation. */
  preview?(name: string): Promise<string | undefined>;
  /** Facts about a pending submit call (e.g. "answer:well-formed"), read by the commit gate. */
  inspectSubmit?(args: Record<string, unknown>): string[];
  /** Releases what the episode holds (a database, a container); called once, also on failure. */
  close?(): Promise<void>;
}

/** An environment family (the embedded suite, DBBench, a remote AppWorld, …). */
export interface Environment {
  /** Tools available on a task; `submit` must be one of them. */
  tools(task: Task): string[];
  start(task: Task, rng: Rng): Promise<EnvSession>;
}

export interface ActionChoice {
  action: string;
  logProb: number;
  /** The tool call's arguments, for text environments. */
  args?: Record<string, unknown>;
  /** Token-level policies: the ids this turn appended and sampled, kept in the trajectory for the update. */
  tokens?: StepTokens;
  /** Text agents: what the model wrote beside its tool call, and the call's argument text as written. */
  text?: string;
  rawArguments?: string;
}

/** One sample used in a policy update. */
export interface UpdateSample {
  rollout: Rollout;
  advantage: number;
}

export interface UpdateBatch {
  baseVersion: number;
  samples: UpdateSample[];
  settings: UpdateSettings;
}

export interface UpdateResult {
  version: number;
  metrics: { loss: number; clippedFraction: number; kl: number; steps: number };
}

/** The policy endpoint: sample actions and apply updates. Versions increase by one per update. */
export interface Policy {
  version(): number;
  act(observation: PolicyObservation, rng: Rng): Promise<ActionChoice>;
  update(batch: UpdateBatch): Promise<UpdateResult>;
  /** The episode that acted with `rng` is over: a policy keeping per-episode state at an endpoint frees it. */
  endEpisode?(rng: Rng): Promise<void>;
}

/** Runs one episode; implemented by the episode runner over an environment and a policy. */
export type RolloutRunner = (task: Task, harness: HarnessSpec, seed: number) => Promise<Rollout>;
