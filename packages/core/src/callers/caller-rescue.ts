import { z } from "zod";
import { SUBMIT } from "../rollout/episode-hooks.ts";
import { Id, Name } from "../names.ts";
import type { Task } from "../task.ts";
import { CallerUrl, SecretHeader } from "../outbound/caller-url.ts";

/**
 * Where a caller's rescue runs its episodes: an OpenEnv-protocol server of the caller's (its
 * URL through the outbound guard; `secretHeader` sent when the session opens), or one of this
 * service's own environments by name (the task is then the service's own task of that id).
 */
export const CallerEnvironment = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("openenv"), url: CallerUrl, secretHeader: SecretHeader.optional() }),
  z.strictObject({ kind: z.literal("builtin"), id: z.enum(["embedded"]) }),
]);
export type CallerEnvironment = z.infer<typeof CallerEnvironment>;

/** One tool of the caller's task as the model sees it (`submit: true` on the one that commits). */
export const CallerTool = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a function name: letters, digits, _ and -"),
  description: z.string().max(8_000).default(""),
  parameters: z.record(z.string(), z.unknown()).default({ type: "object", properties: {} }),
  submit: z.boolean().default(false),
});
export type CallerTool = z.infer<typeof CallerTool>;

/** The caller's task as data: what the router and the policy read, its tools, and its environment's reset arguments. */
export const CallerTask = z.strictObject({
  id: Id,
  family: Name,
  tags: z.array(Name).max(50).default([]),
  instruction: z.string().max(20_000).default(""),
  tools: z
    .array(CallerTool)
    .min(1)
    .max(64)
    .refine(
      (t) => t.filter((x) => x.submit).length === 1,
      "exactly one tool has submit: true (the one that commits the answer)",
    ),
  reset: z.record(Name, z.union([z.string().max(1_000), z.number().finite(), z.boolean()])).default({}),
});
export type CallerTask = z.infer<typeof CallerTask>;

/** What a rescue with the caller's own policy and environment adds to its request. */
export const CallerRescue = z.strictObject({
  /** A policy endpoint the key registered (`/v1/policy-endpoints`). */
  endpoint: Id,
  environment: CallerEnvironment,
  task: CallerTask,
  /** The system message the policy starts each episode with. */
  system: z.string().max(20_000).default(""),
  maxTokens: z.number().int().min(1).max(4_096).default(256),
  /**
   * The weights to sample (the trainer's step); default: the endpoint's version when the rescue starts. Never mixed
   * within a rescue.
   */
  weightVersion: z.number().int().min(0).optional(),
  /**
   * The model name that serves `weightVersion` at an endpoint whose replies state no version
   * (vllm, sglang, openai-chat: required there, with `weightVersion`): the LoRA adapter or the
   * `--served-model-name` of that step, as the server names it in its replies. Every reply must
   * name it; a slot answered by another fails with SERVED_MODEL_MISMATCH.
   */
  servedModel: z.string().min(1).max(200).optional(),
  /**
   * What the rescue may spend: no slot starts once its rollouts have sampled `policyTokens` at the
   * policy or spent `environmentSeconds` in the environment (slots running then finish; the
   * others fail with BUDGET_EXHAUSTED as their reason).
   */
  budget: z
    .strictObject({
      policyTokens: z.number().int().min(1).optional(),
      environmentSeconds: z.number().positive().optional(),
    })
    .optional(),
});
export type CallerRescue = z.infer<typeof CallerRescue>;

/**
 * What one rollout of a caller's rescue spent: tokens sampled at the caller's policy, time waiting on it, time in the
 * caller's environment.
 */
export interface RolloutSpend {
  policyTokens: number;
  policyMs: number;
  environmentMs: number;
}

/**
 * A caller's rescue pinned to one weight version: what its job records, and its rollout messages' source ({@link
 * CallerSource}).
 */
export const CallerRollout = CallerRescue.extend({ keyId: z.string().min(1), weightVersion: z.number().int().min(0) });
export type CallerRollout = z.infer<typeof CallerRollout>;

/**
 * What a rescue must name to sample an endpoint of this kind at one version: where replies state
 * no version, the version and the served model that carries it; where they do, no served model.
 *
 * @example
 * pinProblems(false, { weightVersion: 3 }); // ["servedModel: …"]
 */
export function pinProblems(
  statesVersions: boolean,
  rescue: Pick<CallerRescue, "weightVersion" | "servedModel">,
): string[] {
  if (statesVersions)
    return rescue.servedModel === undefined
      ? []
      : ["servedModel: this endpoint states its versions itself (protocol v2); name weightVersion only"];
  return [
    ...(rescue.weightVersion === undefined
      ? ["weightVersion: this endpoint's replies state no version; name the version the rescue samples"]
      : []),
    ...(rescue.servedModel === undefined
      ? [
          "servedModel: this endpoint's replies state no version; name the model (LoRA adapter or served model name) that serves weightVersion",
        ]
      : []),
  ];
}

/** The core Task a caller's task runs as (its reset arguments as `reset:<key>` params). */
export function callerTaskOf(task: CallerTask): Task {
  return {
    id: task.id,
    family: task.family,
    split: "train",
    instruction: task.instruction,
    tags: task.tags,
    requirements: [],
    cues: [],
    params: Object.fromEntries(Object.entries(task.reset).map(([k, v]) => [`reset:${k}`, v])),
  };
}

/**
 * The task as the episode runs it where the caller's environment serves it (OpenEnv); a built-in environment's is this
 * service's task of that id.
 */
export const ownTaskOf = (caller: CallerRescue): Task | undefined =>
  caller.environment.kind === "openenv" ? callerTaskOf(caller.task) : undefined;

/** The episode runner's action for a caller's tool (the committing one is `submit`). */
export const actionOf = (tool: CallerTool): string => (tool.submit ? SUBMIT : tool.name);
