import type { PolicyEndpointKind } from "@harness-s/core/callers";
import type { EndpointKindAdapter } from "./kind.ts";
import { openaiChat } from "./openai-chat.ts";
import { protocolV2 } from "./protocol-v2.ts";
import { sglang } from "./sglang.ts";
import { vllm } from "./vllm.ts";

export type { CallerSampler, EndpointKindAdapter, Transport } from "./kind.ts";

/**
 * Each kind of policy endpoint's adapter (sampling, version, probe), one line a kind; every kind core declares has one.
 */
export const ENDPOINT_KIND_ADAPTERS: Readonly<Record<PolicyEndpointKind, EndpointKindAdapter>> = {
  "protocol-v2": protocolV2,
  "openai-chat": openaiChat,
  vllm,
  sglang,
};
