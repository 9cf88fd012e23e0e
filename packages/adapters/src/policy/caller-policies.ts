import {
  NotConfiguredError,
  episodeRunner,
  singleFlight,
  ValidationError,
  type Clock,
  type Environment,
  type Rollout,
  type RolloutRunner,
} from "@harness-s/core";
import {
  actionOf,
  ownEndpoint,
  pinProblems,
  statesVersions,
  type CallerEnvironment,
  type CallerRescue,
  type CallerRollout,
  type RolloutSpend,
  type PolicyEndpointRecord,
  type PolicyEndpointStore,
} from "@harness-s/core/callers";
import type { CallerPolicies, CallerSource, RolloutRows } from "@harness-s/core/dispatch";
import { OpenEnvEnvironment } from "../openenv/client.ts";
import { checkOutboundUrl, outboundFetch, OUTBOUND_LIMITS, type OutboundPolicy } from "../net/outbound.ts";
import { ENDPOINT_KIND_ADAPTERS, type CallerSampler, type Transport } from "./kinds/index.ts";
import { timedEnvironment } from "./timed-environment.ts";

export interface CallerPoliciesDeps {
  endpoints: PolicyEndpointStore;
  outbound: OutboundPolicy;
  clock: Clock;
  /** This service's own environments a caller may name (`{"kind": "builtin", "id": …}`), as text environments. */
  builtin?: Partial<Record<"embedded", Environment>>;
  /** Longest wait for one sample or environment step. */
  timeoutMs?: number;
  /**
   * How callers' endpoints are reached; default: through the outbound guard ({@link outboundFetch}), bounded in size
   * and time. Tests hand one that answers in process (a stubbed transport).
   */
  transport?: Transport;
}

const headerOf = (secret: { name: string; value: string } | undefined) =>
  secret ? { [secret.name]: secret.value } : undefined;

/**
 * Rescues with the caller's own policy and environment: each rescue's rollouts sample its
 * registered endpoint as its kind is sampled (protocol v2 at its pinned version; vLLM, SGLang or
 * OpenAI-compatible at the served model that carries the pinned version, in the token mode found
 * when it was registered), through the outbound guard with its secret header, in its OpenEnv
 * environment or a built-in one. Token rows come back as the policy sampled them or, under H0's
 * context, re-scored there (protocol v2's replay). Only sampling: nothing here trains.
 *
 * @example
 * const callers = new CallerPolicyRunners({ endpoints, outbound: { allowLoopback: false }, clock: systemClock });
 */
export class CallerPolicyRunners implements CallerPolicies {
  /** One guarded connection pool for every caller endpoint (not one per rollout). */
  private readonly transport: Transport;

  /**
   * A rescue's slots starting together share one read of its endpoint's record; so do a rescue start's check and
   * version.
   */
  private readonly endpointOf = singleFlight(
    (keyId: string, id: string) => ownEndpoint(keyId, id, this.deps.endpoints),
    (keyId, id) => `${keyId}\n${id}`,
  );

  constructor(private readonly deps: CallerPoliciesDeps) {
    const timeoutMs = deps.timeoutMs ?? OUTBOUND_LIMITS.deadlineMs;
    this.transport = deps.transport ?? {
      fetch: outboundFetch(deps.outbound, { ...OUTBOUND_LIMITS, deadlineMs: timeoutMs }),
      clock: deps.clock,
      timeoutMs,
    };
  }

  private sampler(caller: CallerRollout, record: PolicyEndpointRecord): CallerSampler {
    return ENDPOINT_KIND_ADAPTERS[record.kind].sampler(record, caller, this.transport);
  }

  private builtin(id: "embedded"): Environment {
    const found = this.deps.builtin?.[id];
    if (!found) throw new NotConfiguredError(`this deployment serves no built-in ${id} environment`);
    return found;
  }

  private environment(caller: CallerRollout): Environment {
    const env = caller.environment;
    if (env.kind === "builtin") return this.builtin(env.id);
    const headers = headerOf(env.secretHeader);
    return new OpenEnvEnvironment({
      url: env.url,
      outbound: this.deps.outbound,
      tools: caller.task.tools.map(actionOf),
      submit: caller.task.tools.find((t) => t.submit)!.name,
      ...(headers ? { headers } : {}),
      ...(this.deps.timeoutMs ? { timeoutMs: this.deps.timeoutMs } : {}),
    });
  }

  async runner(caller: CallerSource, onSpend?: (spend: RolloutSpend) => void): Promise<RolloutRunner> {
    const record = await this.endpointOf(caller.keyId, caller.endpoint);
    const environment = this.environment(caller);
    // A sampler and a clock on the environment of each episode's own: what it spent is its own.
    return episodeRunner(() => {
      const sampler = this.sampler(caller, record);
      const timing = { ms: 0 };
      return {
        env: timedEnvironment(environment, timing, this.deps.clock),
        policy: sampler.policy,
        ended: () => onSpend?.({ ...sampler.spent(), environmentMs: timing.ms }),
      };
    });
  }

  async datums(
    caller: CallerRollout,
    rollouts: readonly Rollout[],
    context: "sampled" | "base",
  ): Promise<(RolloutRows | undefined)[]> {
    const record = await ownEndpoint(caller.keyId, caller.endpoint, this.deps.endpoints);
    return this.sampler(caller, record).rows(rollouts, context);
  }

  async checkEndpoint(keyId: string, rescue: CallerRescue): Promise<void> {
    const record = await this.endpointOf(keyId, rescue.endpoint);
    const problems = pinProblems(statesVersions(record.kind), rescue);
    if (problems.length)
      throw new ValidationError(
        "rescue",
        problems.map((p) => `caller.${p}`),
      );
    // A name that resolves to a refused address now (it moved since it was registered) is refused before any rollout.
    await checkOutboundUrl(record.url, this.deps.outbound);
  }

  async checkEnvironment(environment: CallerEnvironment): Promise<void> {
    if (environment.kind === "openenv") await checkOutboundUrl(environment.url, this.deps.outbound);
    else this.builtin(environment.id);
  }

  async currentVersion(keyId: string, id: string): Promise<number> {
    const record = await this.endpointOf(keyId, id);
    return ENDPOINT_KIND_ADAPTERS[record.kind].currentVersion(record, this.transport);
  }
}
