import { systemClock, type ExperimentDeps } from "@harness-s/core";
import { TokenPolicy, TokenPolicyClient, seedOfUnit, tokenUnitPolicies, type SharedTokenPolicyOptions } from "@harness-s/adapters";
import { EMBEDDED_AGENT_SYSTEM, TextEnvironment, embeddedToolSchemas } from "@harness-s/envs";

export interface WorkerPolicyOptions {
  url: string;
  token?: string;
  /** What the worker serves (`tiny`, or the model directory's name); recorded on each policy. */
  model: string;
  learningRate?: number;
  maxTokens?: number;
  lora?: { rank: number; alpha: number; targets: string[] };
  /** Samples in flight at the worker at once (the client holds the rest back). */
  maxInFlight?: number;
}

/**
 * The embedded setup with its policies at a protocol-v2 worker: the suite's text rendering
 * (tools as JSON schemas, events and facts as text, harness notes and hints as messages) and one
 * fresh LoRA policy per unit (arm and seed; the same seed gives the same initial adapter). Unit
 * policies are saved at the worker after every step and released when their unit ends, so a run
 * whose worker died continues (`--resume`) on a fresh worker started on the same `--state-dir`.
 * The sibling pools are still evolved and frozen with the embedded policy, before any training.
 *
 * @example
 * const deps = workerPolicySetup(embeddedSetup(settings), { url: "http://127.0.0.1:8765", model: "tiny" });
 */
export function workerPolicySetup(base: Omit<ExperimentDeps, "onProgress">, opts: WorkerPolicyOptions): Omit<ExperimentDeps, "onProgress"> {
  const client = new TokenPolicyClient(opts.url, { token: opts.token, clock: systemClock, maxInFlight: opts.maxInFlight });
  const run = `run${Date.now().toString(36)}`;
  const shared: SharedTokenPolicyOptions = {
    baseModel: opts.model,
    lora: opts.lora ?? { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj", "lm_head"] },
    system: EMBEDDED_AGENT_SYSTEM,
    toolSchemas: embeddedToolSchemas,
    maxTokens: opts.maxTokens ?? 24,
    learningRate: opts.learningRate,
  };
  let n = 0;
  return {
    ...base,
    env: new TextEnvironment(base.env),
    createPolicy: (seed) => new TokenPolicy(client, { ...shared, policyId: `${run}-${++n}-s${seed}`, seed }),
    policies: tokenUnitPolicies(client, (unit) => `${run}-${unit}`, shared, seedOfUnit),
  };
}
