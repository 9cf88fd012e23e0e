import { NotFoundError } from "../errors.ts";
import { policyVersionMismatch } from "./errors.ts";
import type { Environment, Policy, RolloutRunner } from "../ports.ts";
import { rolloutsIn } from "../rollout/episode-runner.ts";
import type { PolicyEndpoints, ServiceSource } from "./rollout-source.ts";

/**
 * Policies served in this process (the embedded CPU policy), by id: what the GPU endpoint is in
 * the cloud. Every rollout runs the shared episode loop over `env`.
 *
 * @example
 * const endpoints = new LocalPolicyEndpoints(env);
 * endpoints.register("exp1/1/grpo", policy);
 */
export class LocalPolicyEndpoints implements PolicyEndpoints {
  private readonly policies = new Map<string, Policy>();

  constructor(private readonly env: Environment) {}

  register(policyId: string, policy: Policy): void {
    this.policies.set(policyId, policy);
  }

  /** The policy registered under `policyId`, if any. */
  get(policyId: string): Policy | undefined {
    return this.policies.get(policyId);
  }

  release(policyId: string): void {
    this.policies.delete(policyId);
  }

  async runner({ policyId, version }: ServiceSource): Promise<RolloutRunner> {
    const policy = this.policies.get(policyId);
    if (!policy) throw new NotFoundError("policy", policyId);
    if (version !== undefined && policy.version() !== version)
      throw policyVersionMismatch(policyId, version, policy.version());
    return rolloutsIn(this.env, policy);
  }
}

/** One runner behind every policy id (the API's rescues against the served default policy). */
export function singlePolicyEndpoint(runRollout: RolloutRunner): PolicyEndpoints {
  return { runner: async () => runRollout };
}
