import { z } from "zod";

export const DialogueTurn = z.object({
  role: z.enum(["env", "agent"]),
  /** env: what the agent was shown (notes included). */
  text: z.string().default(""),
  /** agent: the tool it called, and the call's arguments. */
  action: z.string().optional(),
  args: z.record(z.string(), z.unknown()).optional(),
  /** agent: the call's argument text exactly as the model wrote it (replayed as is, never re-serialised). */
  raw: z.string().optional(),
});
export type DialogueTurn = z.infer<typeof DialogueTurn>;

/** What the policy sees at one turn. `hints` come from the harness (or the task's own cues). */
export const PolicyObservation = z.object({
  family: z.string(),
  tools: z.array(z.string()).min(1),
  event: z.string(),
  facts: z.array(z.string()),
  taskTags: z.array(z.string()),
  hints: z.array(z.string()),
  /** The subset of `hints` that H0 would also have shown here (the task's own cues). */
  baseHints: z.array(z.string()).default([]),
  failedActions: z.array(z.string()),
  turnsLeft: z.number().int(),
  /** Text environments only: the task's instruction (plus the harness's system note). */
  instruction: z.string().optional(),
  /** Text environments only: what the agent reads now (the last tool output). */
  text: z.string().optional(),
  /** Text environments only: the harness's notes shown with this observation. */
  notes: z.array(z.string()).optional(),
  /** Text environments only: the harness's note for a tool, shown with the tool's description. */
  toolNotes: z.record(z.string(), z.string()).optional(),
  /**
   * Text environments only: the dialogue before this observation, so a stateless LLM policy can
   * rebuild it: env messages (tool output with the harness's notes) and the agent's tool calls.
   */
  history: z.array(DialogueTurn).optional(),
  /**
   * Text environments only: this turn as H0 would have shown it (the task's instruction and cues,
   * no recon preview, no sibling notes), for scoring a rescued turn in H0's context.
   */
  base: z.object({ instruction: z.string(), text: z.string(), notes: z.array(z.string()) }).optional(),
});
export type PolicyObservation = z.infer<typeof PolicyObservation>;

/** What a token-level policy (protocol v2) appended and sampled at one turn: the ids it trains on. */
export const StepTokens = z.object({
  promptIds: z.array(z.number().int()),
  completionIds: z.array(z.number().int()),
  /** One behaviour log-probability per completion id. */
  logprobs: z.array(z.number()),
  /** The policy version that sampled them. */
  version: z.number().int().min(0),
});
export type StepTokens = z.infer<typeof StepTokens>;

export const TrajectoryStep = z.object({
  observation: PolicyObservation,
  action: z.string(),
  /** Behaviour log-probability of `action` under the policy that sampled it (0 when forced). */
  logProb: z.number(),
  /** True when the harness, not the policy, chose the action (excluded from the loss). */
  forced: z.boolean().default(false),
  /** True when the harness intercepted the sampled action (a pre-action block or the commit gate). */
  intercepted: z.boolean().default(false),
  /** Event the environment (or the harness) answered with. */
  result: z.string(),
  /** The tool call's arguments (text environments). */
  args: z.record(z.string(), z.unknown()).optional(),
  /** What the agent was shown as the result (text environments). */
  resultText: z.string().optional(),
  /** Token-level policies only: the ids of this turn (never re-tokenised for training). */
  tokens: StepTokens.optional(),
});
export type TrajectoryStep = z.infer<typeof TrajectoryStep>;

/** One episode of (task, harness, policy version, seed). */
export const Rollout = z.object({
  id: z.string(),
  taskId: z.string(),
  family: z.string(),
  harnessId: z.string(),
  policyVersion: z.number().int(),
  seed: z.number().int(),
  steps: z.array(TrajectoryStep),
  reward: z.number().min(0).max(1),
  success: z.boolean(),
  failureTags: z.array(z.string()),
  /** Events seen during the episode, in order of first appearance. */
  events: z.array(z.string()),
  behaviours: z.record(z.string(), z.boolean()),
});
export type Rollout = z.infer<typeof Rollout>;
