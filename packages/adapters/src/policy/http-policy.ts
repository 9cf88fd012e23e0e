import { PolicyEndpointError } from "../errors.ts";
import { ActResponse, PolicyState, UpdateResponse } from "@harness-s/core/protocol";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import {
  rolloutsIn,
  type ActionChoice,
  type Environment,
  type Policy,
  type PolicyObservation,
  type Rng,
  type RolloutRunner,
  type UpdateBatch,
  type UpdateResult,
} from "@harness-s/core";
import type { PolicyEndpoints, ServiceSource } from "@harness-s/core/dispatch";
import type { UnitPolicies } from "@harness-s/core/experiment";
import { z } from "zod";

const DeletedResponse = z.object({ deleted: z.boolean() });
/**
 * A v1 endpoint's 409 on a version (the service's own error body): the version its policy holds and the one asked for.
 */
const StaleVersions = z.object({
  error: z.object({
    message: z.string(),
    heldVersion: z.number().int().min(0),
    wantedVersion: z.number().int().min(0),
  }),
});

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function call<S extends z.ZodType>(
  base: string,
  method: string,
  path: string,
  schema: S,
  body?: unknown,
  timeoutMs = 30_000,
): Promise<z.infer<S>> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new PolicyEndpointError(`${method} ${path}: ${(err as Error).message}`, { cause: err });
  }
  const text = await res.text();
  if (res.status === 409) {
    const stated = StaleVersions.safeParse(safeJson(text)).data?.error;
    throw new StalePolicyVersionError(
      stated?.heldVersion,
      stated?.wantedVersion,
      `${method} ${path}: ${stated?.message ?? text.slice(0, 200)}`,
    );
  }
  if (!res.ok)
    throw new PolicyEndpointError(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`, undefined, res.status);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PolicyEndpointError(`${method} ${path}: not JSON: ${text.slice(0, 200)}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new PolicyEndpointError(`${method} ${path}: unexpected answer ${text.slice(0, 200)}`);
  return parsed.data;
}

/**
 * A policy that lives at the policy endpoint (the managed GPU endpoint): sampling and updates
 * are HTTP calls; the version is the endpoint's. Created lazily and idempotently on first use.
 *
 * @example
 * const policy = new RemotePolicy("https://policy.example", "exp1/harness-s/1");
 */
export class RemotePolicy implements Policy {
  private current = 0;
  private created?: Promise<void>;

  /** `expectVersion`: sample only at this version (the endpoint answers 409 otherwise). */
  constructor(
    private readonly baseUrl: string,
    readonly id: string,
    private readonly expectVersion?: number,
  ) {}

  private path(suffix = "") {
    return `/v1/policies/${encodeURIComponent(this.id)}${suffix}`;
  }

  /**
   * The policy already at the endpoint under `id`, at its current version; undefined if the
   * endpoint does not have it (a new one is never created).
   *
   * @example
   * const policy = await RemotePolicy.attach(url, "exp1/harness-s/3/attempt-1");
   */
  static async attach(baseUrl: string, id: string): Promise<RemotePolicy | undefined> {
    const policy = new RemotePolicy(baseUrl, id);
    try {
      const state = await call(baseUrl, "GET", policy.path(), PolicyState);
      policy.current = state.version;
      policy.created = Promise.resolve();
      return policy;
    } catch (err) {
      if (err instanceof PolicyEndpointError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Deletes the policy at the endpoint. */
  async release(): Promise<void> {
    await call(this.baseUrl, "DELETE", this.path(), DeletedResponse);
  }

  ensure(): Promise<void> {
    this.created ??= call(this.baseUrl, "PUT", this.path(), PolicyState, {}).then((s) => {
      this.current = s.version;
    });
    return this.created;
  }

  version(): number {
    return this.expectVersion ?? this.current;
  }

  async act(observation: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    await this.ensure();
    const r = await call(this.baseUrl, "POST", this.path("/act"), ActResponse, {
      observation,
      seed: rng.int(2 ** 31),
      version: this.expectVersion ?? this.current,
    });
    return { action: r.action, logProb: r.logProb, ...(r.args ? { args: r.args } : {}) };
  }

  async update(batch: UpdateBatch): Promise<UpdateResult> {
    await this.ensure();
    const r = await call(this.baseUrl, "POST", this.path("/update"), UpdateResponse, batch, 120_000);
    this.current = r.version;
    return r;
  }
}

/**
 * The dispatch worker's view of the policy endpoint: a runner for one policy id at one
 * version, running the episode loop here and sampling there.
 */
export class HttpPolicyEndpoints implements PolicyEndpoints {
  constructor(
    private readonly baseUrl: string,
    private readonly env: Environment,
  ) {}

  async runner({ policyId, version }: ServiceSource): Promise<RolloutRunner> {
    const policy = new RemotePolicy(this.baseUrl, policyId, version);
    return rolloutsIn(this.env, policy);
  }
}

/**
 * Unit policies at the policy endpoint: a fresh one per (unit, attempt) named by `idFor`, and
 * the one a checkpoint names, re-attached with its current version.
 *
 * @example
 * const policies = remoteUnitPolicies(url, (unit) => `${record.id}/${unit}/attempt-${record.attempts}`);
 */
export function remoteUnitPolicies(baseUrl: string, idFor: (unit: string) => string): UnitPolicies {
  return {
    create: async (unit) => {
      const policy = new RemotePolicy(baseUrl, idFor(unit));
      await policy.ensure();
      return { id: policy.id, policy };
    },
    attach: (id) => RemotePolicy.attach(baseUrl, id),
    release: (id) => new RemotePolicy(baseUrl, id).release(),
  };
}
