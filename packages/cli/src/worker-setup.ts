import { systemClock, type ExperimentDeps } from "@harness-s/core";
import { TokenPolicy, TokenPolicyClient } from "@harness-s/adapters";
import { TextEnvironment, embeddedToolSchemas } from "@harness-s/envs";

export interface WorkerPolicyOptions {
  url: string;
  token?: string;
  /** What the worker serves (`tiny`, or the model directory's name); recorded on each policy. */
  model: string;
  learningRate?: number;
  maxTokens?: number;
  lora?: { rank: number; alpha: number; targets: string[] };
}

const SYSTEM = "You are an agent solving a task with tools. Each turn, call exactly one tool. Call submit when the task is done.";

/**
 * The embedded setup with its policies at a protocol-v2 worker: the suite's text rendering
 * (tools as JSON schemas, events and facts as text, harness notes and hints as messages) and one
 * fresh LoRA policy per arm and seed (the same seed gives the same initial adapter). The sibling
 * pools are still evolved and frozen with the embedded policy, before any training.
 *
 * @example
 * const deps = workerPolicySetup(embeddedSetup(settings), { url: "http://127.0.0.1:8765", model: "tiny" });
 */
export function workerPolicySetup(base: Omit<ExperimentDeps, "onProgress">, opts: WorkerPolicyOptions): Omit<ExperimentDeps, "onProgress"> {
  const client = new TokenPolicyClient(opts.url, { token: opts.token, clock: systemClock });
  const run = `run${Date.now().toString(36)}`;
  let n = 0;
  return {
    ...base,
    env: new TextEnvironment(base.env),
    createPolicy: (seed) =>
      new TokenPolicy(client, {
        policyId: `${run}-${++n}-s${seed}`,
        baseModel: opts.model,
        lora: opts.lora ?? { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj", "lm_head"] },
        seed,
        system: SYSTEM,
        toolSchemas: embeddedToolSchemas,
        maxTokens: opts.maxTokens ?? 24,
        learningRate: opts.learningRate,
      }),
  };
}
