import { z } from "zod";

/**
 * How a rescue samples an endpoint whose replies name no weight version, token-exactly. Tokens in:
 * the endpoint's own `/tokenize` renders each new message (the delta between two renders) and the
 * episode's ids are sent back as they are, to `/v1/completions` with an id prompt
 * (`completions-ids`), `/inference/v1/generate` (`inference-generate`) or SGLang's `/generate`
 * (`sglang-generate`). Messages in (`chat-token-ids`): the whole conversation each turn to chat
 * completions that report the prompt's and the completion's ids, each turn checked to extend the
 * ids before it.
 */
export const TokenMode = z.enum(["completions-ids", "inference-generate", "sglang-generate", "chat-token-ids"]);
export type TokenMode = z.infer<typeof TokenMode>;

/**
 * What a kind of endpoint is: the token modes its probe tries, in order (none: it speaks protocol v2 and states its
 * versions), and its chat completions path.
 */
export interface EndpointKindFacts {
  modes: readonly TokenMode[];
  /** Modes a registration may ask for by name that the probe does not try of itself. */
  askedOnly?: readonly TokenMode[];
  /** Relative to the registered URL: an `openai-chat` URL is the `/v1` base, a vLLM or SGLang URL the server's root. */
  chatPath: string;
}

/**
 * Every kind of policy endpoint a caller may register, declared once, one entry a kind: protocol v2
 * (this project's worker, or any server speaking docs/design.md §5; `policy` is the policy's id
 * there), any OpenAI-compatible chat completions that return token ids and log-probabilities (`url`
 * its `/v1` base, `policy` the model name), a vLLM or SGLang server (`url` its root, `policy` the
 * model name the probe asks for). How each is sampled and probed is its adapter's
 * (`@harness-s/adapters`' endpoint kinds, one file a kind).
 */
export const ENDPOINT_KINDS = {
  "protocol-v2": { modes: [], chatPath: "/v1/chat/completions" },
  "openai-chat": { modes: ["chat-token-ids"], chatPath: "/chat/completions" },
  vllm: { modes: ["completions-ids", "inference-generate", "chat-token-ids"], chatPath: "/v1/chat/completions" },
  // SGLang: messages in, its chat replies' ids read per choice. Its /tokenize cannot serve the delta rule (a text
  // prompt only in older releases; messages rendered always with the generation prompt at
  // sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a protocol.py `TokenizeRequest`), so `sglang-generate` (tokens in
  // to /generate) is probed only when a registration asks for it, for a server whose /tokenize renders as vLLM's does.
  sglang: { modes: ["chat-token-ids"], askedOnly: ["sglang-generate"], chatPath: "/v1/chat/completions" },
} as const satisfies Record<string, EndpointKindFacts>;

export type PolicyEndpointKind = keyof typeof ENDPOINT_KINDS;
export const PolicyEndpointKind = z.enum(Object.keys(ENDPOINT_KINDS) as [PolicyEndpointKind, ...PolicyEndpointKind[]]);

/**
 * The token modes each kind offers, in the order a registration's probe tries them (tokens in first); protocol v2
 * speaks its own protocol and states its versions.
 */
export const KIND_MODES = Object.fromEntries(
  Object.entries(ENDPOINT_KINDS).map(([kind, facts]) => [kind, facts.modes]),
) as unknown as Readonly<Record<PolicyEndpointKind, readonly TokenMode[]>>;

/** The modes a registration of each kind may name: those its probe tries, and those it tries only when asked. */
export const KIND_ALLOWED_MODES = Object.fromEntries(
  Object.entries(ENDPOINT_KINDS).map(([kind, facts]) => [
    kind,
    [...facts.modes, ...((facts as EndpointKindFacts).askedOnly ?? [])],
  ]),
) as unknown as Readonly<Record<PolicyEndpointKind, readonly TokenMode[]>>;

/**
 * Whether an endpoint's replies state the weight version that answered (protocol v2); the others are pinned by the
 * served model's name.
 */
export const statesVersions = (kind: PolicyEndpointKind): boolean => KIND_MODES[kind].length === 0;
