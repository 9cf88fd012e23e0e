import { ValidationError } from "@harness-s/core";
import {
  ENDPOINT_KINDS,
  type PolicyEndpointKind,
  type PolicyEndpointRecord,
  type RegisterPolicyEndpoint,
  type TokenMode,
} from "@harness-s/core/callers";
import {
  EndpointNotTokenExactError,
  EndpointProbeError,
  EndpointRouteMissingError,
  PolicyEndpointError,
  PolicyReplyInvalidError,
  ServedModelMismatchError,
} from "../../errors.ts";
import { ServedClient } from "../served-client.ts";
import { whyUnanswered } from "../json-transport.ts";
import { MissingIdsError, TOKEN_MODES, type ServedTarget } from "../served-modes.ts";
import type { BaseScoring } from "../served-base.ts";
import { ServedSampler } from "../served-sampler.ts";
import { baseOf, headerOf, rendering, settingsOf, type EndpointKindAdapter, type Transport } from "./kind.ts";

/** `<name>@v<n>`, as the policy worker's façade names the version it answered at. */
const versionOf = (model: string | undefined): number | null => {
  const m = model?.match(/@v(\d+)$/);
  return m ? Number(m[1]) : null;
};

/** Why a mode's probe failed, in the prober's words (an endpoint's own error text is not relayed). */
function reason(err: unknown, model: string): EndpointProbeError {
  if (err instanceof EndpointProbeError) return err;
  if (err instanceof MissingIdsError) return new EndpointProbeError(err.message, "ENDPOINT_NO_TOKEN_IDS");
  if (err instanceof EndpointRouteMissingError) return new EndpointProbeError(err.message, "ENDPOINT_ROUTE_MISSING");
  const request = (err as Error).message.split(":")[0];
  if (err instanceof PolicyEndpointError)
    return new EndpointProbeError(
      err.status === undefined
        ? `the endpoint did not answer ${request}: ${whyUnanswered(err.cause)}`
        : `the endpoint answered HTTP ${err.status} to ${request}`,
    );
  if (err instanceof ServedModelMismatchError)
    return new EndpointProbeError(
      `the endpoint answered HTTP 404 to ${request}: it serves no model ${JSON.stringify(model)}`,
      "SERVED_MODEL_MISMATCH",
    );
  if (err instanceof PolicyReplyInvalidError)
    return new EndpointProbeError(
      (err.message.includes("is not JSON") ? `${request}: the endpoint's answer is not JSON` : err.message).slice(
        0,
        500,
      ),
    );
  throw err;
}

const clientOf = (
  endpoint: Pick<RegisterPolicyEndpoint, "url" | "secretHeader">,
  { fetch, clock, timeoutMs }: Transport,
  retries?: number,
) => {
  const headers = headerOf(endpoint.secretHeader);
  return new ServedClient(baseOf(endpoint.url), {
    clock,
    fetch,
    timeoutMs,
    ...(retries === undefined ? {} : { retries }),
    ...(headers ? { headers } : {}),
  });
};

/**
 * How one kind's server is addressed on the wire: what a chat request names and adds, the model its reply names, the
 * names it lists, the version it holds now. Each kind's file gives its own (vllm.ts, sglang.ts, openai-chat.ts).
 */
export interface ServedWire {
  /** The target's request fields for `servedModel` on a server registered for `baseModel`. */
  target(
    model: string,
    baseModel: string,
    servedNames: readonly string[] | undefined,
  ): Pick<ServedTarget, "answersAs" | "chatExtras">;
  /** The base model's served names the server lists (recorded at registration), where it lists them. */
  servedNames?(client: ServedClient): Promise<string[] | undefined>;
  /** The weight version the server holds now, where it states one. */
  currentVersion?(client: ServedClient, record: PolicyEndpointRecord): Promise<number>;
  /** How it re-scores completions in H0's context (`context=base`), where it can. */
  base?: BaseScoring;
}

/** One token sampled in `mode`, as a rescue's first turn samples it. */
async function sampleOne(
  endpoint: RegisterPolicyEndpoint,
  mode: TokenMode,
  transport: Transport,
  wire: ServedWire,
  servedNames: string[] | undefined,
) {
  const target = {
    client: clientOf(endpoint, transport, 0),
    model: endpoint.policy,
    baseModel: endpoint.policy,
    chatPath: ENDPOINT_KINDS[endpoint.kind].chatPath,
    ...wire.target(endpoint.policy, endpoint.policy, servedNames),
  };
  const turn = await TOKEN_MODES[mode](target, []).turn([{ role: "user", content: "ping" }], {
    temperature: 1,
    top_p: 1,
    max_tokens: 1,
  });
  if (!turn.completionIds.length)
    throw new EndpointProbeError(`${mode}: the endpoint sampled no token`, "ENDPOINT_NO_TOKEN_IDS");
  return {
    weightVersion: versionOf(turn.model),
    checkedAt: transport.clock.now(),
    mode,
    ...(servedNames ? { servedNames } : {}),
  };
}

/**
 * A served kind (vLLM, SGLang, OpenAI-compatible chat): no version in its replies, so the rescue's
 * served model pins it; sampled in the token mode the registration's probe found (a record from
 * before modes were recorded: chat completions). Its probe samples one token in the mode asked for,
 * or each of the kind's in order (tokens in first) until one answers with ids and log-probabilities;
 * none is `ENDPOINT_NOT_TOKEN_EXACT` naming what each got (one mode: its own answer).
 */
export function servedKind(kind: Exclude<PolicyEndpointKind, "protocol-v2">, wire: ServedWire): EndpointKindAdapter {
  return {
    sampler(record, caller, transport) {
      const client = clientOf(record, transport);
      const model = caller.servedModel ?? record.policy;
      const target = {
        client,
        model,
        baseModel: record.policy,
        chatPath: ENDPOINT_KINDS[kind].chatPath,
        ...wire.target(model, record.policy, record.probe.servedNames),
      };
      const policy = new ServedSampler({
        target,
        mode: record.probe.mode ?? "chat-token-ids",
        weightVersion: caller.weightVersion,
        ...rendering(caller),
        ...(wire.base ? { base: wire.base } : {}),
      });
      return {
        policy,
        spent: () => ({
          policyTokens: client.sampled.promptTokens + client.sampled.completionTokens,
          policyMs: client.sampled.ms,
        }),
        rows: (rollouts, context) =>
          policy.datums({
            samples: rollouts.map((rollout) => ({ rollout, advantage: rollout.reward })),
            settings: settingsOf(context),
          }),
      };
    },
    currentVersion: async (record, transport) => {
      if (wire.currentVersion) return wire.currentVersion(clientOf(record, transport), record);
      throw new ValidationError("rescue", [
        `weightVersion: ${record.kind} endpoints state no version; name it, with its servedModel`,
      ]);
    },
    async probe(endpoint, transport) {
      const modes = endpoint.mode ? [endpoint.mode] : ENDPOINT_KINDS[kind].modes;
      const servedNames = await wire.servedNames?.(clientOf(endpoint, transport, 0));
      const failed: [TokenMode, EndpointProbeError][] = [];
      for (const mode of modes) {
        try {
          return await sampleOne(endpoint, mode, transport, wire, servedNames);
        } catch (err) {
          if ((err as { code?: string }).code === "URL_NOT_ALLOWED") throw err;
          failed.push([mode, reason(err, endpoint.policy)]);
        }
      }
      if (failed.length === 1) throw failed[0]![1];
      throw new EndpointNotTokenExactError(
        `the ${kind} server offers no token-exact mode: ${failed.map(([mode, err]) => `${mode}: ${err.message}`).join("; ")} (tokens in needs /tokenize with messages; messages in needs prompt_token_ids, token_ids and logprobs in the reply)`,
      );
    },
  };
}
