import { z } from "zod";
import { NotFoundError, rolloutsIn, type Environment, type RolloutRunner } from "@harness-s/core";
import type { PolicyEndpoints, ServiceSource } from "@harness-s/core/dispatch";
import type { UnitPolicies } from "@harness-s/core/experiment";
import { PolicyEndpointError } from "../errors.ts";
import { TokenSampler, type TokenSamplerOptions } from "./token-sampler.ts";
import { TokenTrainer, type TokenTrainerOptions } from "./token-trainer.ts";
import type { TokenPolicyClient } from "./token-policy-client.ts";

/** The settings every policy of a run shares (everything but its id and seed). */
export type SharedTokenPolicyOptions = Omit<
  TokenTrainerOptions,
  "policyId" | "seed" | "expectVersion" | "attached" | "initFrom"
>;
/** The settings every rollout sampled at a run's policies shares: how turns are rendered. */
export type SharedSamplingOptions = Omit<TokenSamplerOptions, "policyId" | "expectVersion">;

/** A run's policy id as a worker id: characters outside the worker's set (such as '/') become '.'. */
export function workerPolicyId(id: string): string {
  return id
    .replace(/[^A-Za-z0-9_.:@+=-]/g, ".")
    .replace(/^[^A-Za-z0-9]/, "p")
    .slice(0, 200);
}

const Health = z.object({ protocol: z.number().int().optional() }).passthrough();

/**
 * Which protocol the policy endpoint speaks: 2 when its `/healthz` says so (the reference worker
 * does), else 1 (the embedded `policy-serve`, which has no such route).
 */
export async function policyProtocol(baseUrl: string, token?: string): Promise<1 | 2> {
  try {
    const res = await fetch(`${baseUrl}/healthz`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) return 1;
    return Health.safeParse(await res.json()).data?.protocol === 2 ? 2 : 1;
  } catch {
    return 1;
  }
}

/**
 * The dispatch worker's view of a protocol-v2 endpoint: a runner for one policy at one version,
 * running the episode loop here (on the environment's text rendering) and sampling there.
 *
 * @example
 * const endpoints = new TokenPolicyEndpoints(client, new TextEnvironment(new EmbeddedEnvironment()), shared);
 */
export class TokenPolicyEndpoints implements PolicyEndpoints {
  constructor(
    private readonly client: TokenPolicyClient,
    private readonly env: Environment,
    private readonly shared: SharedSamplingOptions,
  ) {}

  async runner({ policyId, version }: ServiceSource): Promise<RolloutRunner> {
    const policy = new TokenSampler(this.client, {
      ...this.shared,
      policyId: workerPolicyId(policyId),
      ...(version === undefined ? {} : { expectVersion: version }),
    });
    return rolloutsIn(this.env, policy);
  }
}

/** The seed of a unit named `<arm>/<seed>` (or `initial/<seed>`); 0 for a name without one. */
export function seedOfUnit(unit: string): number {
  return Number(unit.split("/").at(-1)) || 0;
}

/**
 * Unit policies at a protocol-v2 worker: a fresh LoRA per (unit, attempt) named by `idFor`, and
 * the one a checkpoint names, re-attached at its current version — or, where the worker lost it
 * (a restarted process on the same state folder), re-created from the worker checkpoint that
 * `persist` saved after the step being resumed.
 */
export function tokenUnitPolicies(
  client: TokenPolicyClient,
  idFor: (unit: string) => string,
  shared: SharedTokenPolicyOptions,
  seedOf: (unit: string) => number = () => 0,
): UnitPolicies {
  return {
    create: async (unit) => {
      const policy = new TokenTrainer(client, { ...shared, policyId: workerPolicyId(idFor(unit)), seed: seedOf(unit) });
      await policy.ensure();
      return { id: policy.id, policy };
    },
    attach: async (id, seed, version) => {
      const policyId = workerPolicyId(id);
      const policy = new TokenTrainer(client, { ...shared, policyId, seed: 0, attached: true });
      try {
        await policy.ensure();
        return policy;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
      if (version === undefined) return undefined;
      const restored = new TokenTrainer(client, { ...shared, policyId, seed, initFrom: `${policyId}/v${version}` });
      try {
        await restored.ensure();
        return restored;
      } catch (err) {
        if (err instanceof PolicyEndpointError && err.status === 400) return undefined; // no such checkpoint: the unit starts over
        throw err;
      }
    },
    persist: async (id) => {
      await client.checkpoint(workerPolicyId(id));
    },
    release: (id) => client.remove(workerPolicyId(id)),
  };
}

/** Picks v1 or v2 on first use by asking the endpoint ({@link policyProtocol}); then keeps it. */
export class AutoPolicyEndpoints implements PolicyEndpoints {
  private chosen?: Promise<PolicyEndpoints>;

  constructor(
    private readonly baseUrl: string,
    private readonly make: { v1: () => PolicyEndpoints; v2: () => PolicyEndpoints },
    private readonly token?: string,
  ) {}

  async runner(source: ServiceSource): Promise<RolloutRunner> {
    this.chosen ??= policyProtocol(this.baseUrl, this.token).then((p) => (p === 2 ? this.make.v2() : this.make.v1()));
    return (await this.chosen).runner(source);
  }
}
