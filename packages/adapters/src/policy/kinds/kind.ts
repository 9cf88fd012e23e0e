import type { Clock, Policy, Rollout } from "@harness-s/core";
import {
  actionOf,
  type CallerRollout,
  type EndpointProbe,
  type PolicyEndpointRecord,
  type RegisterPolicyEndpoint,
} from "@harness-s/core/callers";
import type { RolloutRows } from "@harness-s/core/dispatch";

/** What sampling an endpoint needs of the service: its guarded fetch, its clock and its wait for one answer. */
export interface Transport {
  fetch: typeof fetch;
  clock: Clock;
  timeoutMs: number;
}

/** A policy of one rescue at its endpoint, and what it has spent there. */
export interface CallerSampler {
  policy: Omit<Policy, "update">;
  spent(): { policyTokens: number; policyMs: number };
  rows(rollouts: readonly Rollout[], context: "sampled" | "base"): Promise<(RolloutRows | undefined)[]>;
}

/**
 * One kind of policy endpoint, whole: how a rescue's episodes sample it (`sampler`), the version it
 * holds now (`currentVersion`), and how a registration probes it (`probe`, through the outbound
 * guard's `transport`). Its facts (token modes, chat path) are core's `ENDPOINT_KINDS`; one file a
 * kind in this folder, one line a kind in its index.
 */
export interface EndpointKindAdapter {
  sampler(record: PolicyEndpointRecord, caller: CallerRollout, transport: Transport): CallerSampler;
  currentVersion(record: PolicyEndpointRecord, transport: Transport): Promise<number>;
  probe(endpoint: RegisterPolicyEndpoint, transport: Transport): Promise<EndpointProbe>;
}

export const headerOf = (secret: { name: string; value: string } | undefined) =>
  secret ? { [secret.name]: secret.value } : undefined;

/** The registered URL without its trailing slashes (paths are appended to it). */
export const baseOf = (url: string) => url.replace(/\/+$/, "");

/** How a rescue's rows are scored: as sampled, or re-scored in H0's context. */
export const settingsOf = (context: "sampled" | "base") => ({
  maskIntercepted: true,
  rescueContext: context === "base" ? ("base" as const) : ("as-generated" as const),
});

/**
 * How one rescue's episodes read a caller's task: its system message, its tools as the model sees them, their names and
 * the longest turn.
 */
export function rendering(caller: CallerRollout) {
  const tools = caller.task.tools;
  const byAction = new Map(tools.map((t) => [actionOf(t), t]));
  const submit = tools.find((t) => t.submit)!;
  return {
    system: caller.system,
    maxTokens: caller.maxTokens,
    toolSchemas: (actions: readonly string[]) =>
      actions.flatMap((a) => {
        const t = byAction.get(a);
        return t
          ? [
              {
                type: "function" as const,
                function: { name: t.name, description: t.description, parameters: t.parameters },
              },
            ]
          : [];
      }),
    toolNames: { submit: submit.name },
  };
}
