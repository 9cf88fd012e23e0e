import { NotConfiguredError, runEpisode, type Clock, type Environment, type Rollout, type RolloutRunner } from "@harness-s/core";
import {
  actionOf,
  ownEndpoint,
  type CallerEnvironment,
  type CallerPolicies,
  type CallerRollout,
  type CallerSource,
  type RolloutSpend,
  type PolicyEndpointRecord,
  type PolicyEndpointStore,
} from "@harness-s/core/rescue";
import type { Datum } from "@harness-s/core/protocol";
import { OpenEnvEnvironment } from "../openenv/client.ts";
import { checkOutboundUrl, outboundFetch, OUTBOUND_LIMITS, type OutboundPolicy } from "../net/outbound.ts";
import { TokenSampler } from "./token-sampler.ts";
import { TokenPolicyClient } from "./token-policy-client.ts";
import { timedEnvironment } from "./timed-environment.ts";

export interface CallerPoliciesDeps {
  endpoints: PolicyEndpointStore;
  outbound: OutboundPolicy;
  clock: Clock;
  /** This service's own environments a caller may name (`{"kind": "builtin", "id": …}`), as text environments. */
  builtin?: Partial<Record<"embedded", Environment>>;
  /** Longest wait for one sample or environment step. */
  timeoutMs?: number;
}

const headerOf = (secret: { name: string; value: string } | undefined) => (secret ? { [secret.name]: secret.value } : undefined);

/**
 * Rescues with the caller's own policy and environment: each rescue's rollouts sample its
 * registered protocol-v2 endpoint (never created or updated here: attached, at the rescue's
 * pinned weight version, so a trainer that moved on gets a clear 409 instead of mixed versions),
 * through the outbound guard with its secret header, in its OpenEnv environment or a built-in one.
 * Token rows come back as the policy sampled them or, under H0's context, replayed and re-scored
 * at the endpoint at the rescue's weight version (protocol v2's replay; a trainer that moved on
 * gets its worker's 409, both versions named). Only sampling: nothing here trains.
 *
 * @example
 * const callers = new CallerPolicyRunners({ endpoints, outbound: { allowLoopback: false }, clock: systemClock });
 */
export class CallerPolicyRunners implements CallerPolicies {
  /** One guarded connection pool for every caller endpoint (not one per rollout). */
  private readonly fetch: typeof fetch;

  constructor(private readonly deps: CallerPoliciesDeps) {
    this.fetch = outboundFetch(deps.outbound, { ...OUTBOUND_LIMITS, deadlineMs: deps.timeoutMs ?? OUTBOUND_LIMITS.deadlineMs });
  }

  private async endpoint(keyId: string, id: string): Promise<PolicyEndpointRecord> {
    const record = await ownEndpoint(keyId, id, this.deps.endpoints);
    if (record.kind !== "protocol-v2")
      throw new NotConfiguredError(
        "rescue rollouts sample protocol-v2 endpoints (their ids and log-probabilities, and replay under H0); register the policy's worker, or use the gateway with an OpenAI-compatible one",
      );
    return record;
  }

  private client(record: PolicyEndpointRecord): TokenPolicyClient {
    const headers = headerOf(record.secretHeader);
    return new TokenPolicyClient(record.url.replace(/\/+$/, ""), {
      clock: this.deps.clock,
      fetch: this.fetch,
      timeoutMs: this.deps.timeoutMs ?? OUTBOUND_LIMITS.deadlineMs,
      ...(headers ? { headers } : {}),
    });
  }

  private policy(caller: CallerRollout, record: PolicyEndpointRecord, client = this.client(record)): TokenSampler {
    const tools = caller.task.tools;
    const byAction = new Map(tools.map((t) => [actionOf(t), t]));
    const submit = tools.find((t) => t.submit)!;
    return new TokenSampler(client, {
      policyId: record.policy,
      expectVersion: caller.weightVersion,
      system: caller.system,
      maxTokens: caller.maxTokens,
      toolSchemas: (actions) =>
        actions.flatMap((a) => {
          const t = byAction.get(a);
          return t ? [{ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } }] : [];
        }),
      toolNames: { submit: submit.name },
    });
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
    const record = await this.endpoint(caller.keyId, caller.endpoint);
    const environment = this.environment(caller);
    // A client, a policy and a clock on the environment of each episode's own: what it spent is its own.
    return async (task: Parameters<typeof runEpisode>[0], harness: Parameters<typeof runEpisode>[1], seed: number) => {
      const client = this.client(record);
      const timing = { ms: 0 };
      try {
        return await runEpisode(task, harness, seed, { env: timedEnvironment(environment, timing, this.deps.clock), policy: this.policy(caller, record, client) });
      } finally {
        onSpend?.({ policyTokens: client.sampled.promptTokens + client.sampled.completionTokens, policyMs: client.sampled.ms, environmentMs: timing.ms });
      }
    };
  }

  async datums(caller: CallerRollout, rollouts: readonly Rollout[], context: "sampled" | "base"): Promise<Datum[]> {
    const policy = this.policy(caller, await this.endpoint(caller.keyId, caller.endpoint));
    const settings = { maskIntercepted: true, rescueContext: context === "base" ? ("base" as const) : ("as-generated" as const) };
    if (context === "base") await policy.ensure();
    return policy.datums({ samples: rollouts.map((rollout) => ({ rollout, advantage: rollout.reward })), settings });
  }

  async checkEnvironment(environment: CallerEnvironment): Promise<void> {
    if (environment.kind === "openenv") await checkOutboundUrl(environment.url, this.deps.outbound);
    else this.builtin(environment.id);
  }

  async currentVersion(keyId: string, id: string): Promise<number> {
    const record = await this.endpoint(keyId, id);
    return (await this.client(record).state(record.policy)).version;
  }
}
