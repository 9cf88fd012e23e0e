import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { Id } from "../names.ts";
import { CallerUrl, MAX_CALLER_URL_CHARS, SecretHeader } from "../outbound/caller-url.ts";

/**
 * A policy a caller serves and a rescue samples from: protocol v2 (this project's worker, or any
 * server speaking docs/design.md §5; `policy` is the policy's id there), a vLLM or SGLang server
 * (`url` its root, `policy` the model name the probe asks for), or any OpenAI-compatible chat
 * completions that return token ids and log-probabilities (`url` its `/v1` base, `policy` the model name).
 */
export const PolicyEndpointKind = z.enum(["protocol-v2", "openai-chat", "vllm", "sglang"]);
export type PolicyEndpointKind = z.infer<typeof PolicyEndpointKind>;

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
 * The token modes each kind offers, in the order a registration's probe tries them (tokens in
 * first); protocol v2 speaks its own protocol and states its versions.
 */
export const KIND_MODES: Readonly<Record<PolicyEndpointKind, readonly TokenMode[]>> = {
  "protocol-v2": [],
  vllm: ["completions-ids", "inference-generate", "chat-token-ids"],
  sglang: ["sglang-generate", "chat-token-ids"],
  "openai-chat": ["chat-token-ids"],
};

/** Whether an endpoint's replies state the weight version that answered (protocol v2); the others are pinned by the served model's name. */
export const statesVersions = (kind: PolicyEndpointKind): boolean => KIND_MODES[kind].length === 0;

export const RegisterPolicyEndpoint = z.strictObject({
  id: Id,
  kind: PolicyEndpointKind,
  url: CallerUrl,
  policy: z.string().min(1).max(200),
  secretHeader: SecretHeader.optional(),
  /** The token mode to use (one of the kind's): the probe checks that one only. Default: the first of the kind's the server offers. */
  mode: TokenMode.optional(),
});
export type RegisterPolicyEndpoint = z.infer<typeof RegisterPolicyEndpoint>;

/**
 * What a registration's probe found: the weights' version the endpoint reports (null when it
 * reports none) and, for a kind without versions, the token mode rescues sample it by (a record
 * from before modes were recorded samples by chat completions).
 */
export const EndpointProbe = z.object({ weightVersion: z.number().int().min(0).nullable(), checkedAt: z.number(), mode: TokenMode.optional() });
export type EndpointProbe = z.infer<typeof EndpointProbe>;

/**
 * A registration as stored, read back as stored: its URL already the canonical form the guard
 * checked and its secret header checked when registered (a record kept from before a rule was
 * added still reads, and is replaced by registering it again).
 */
export const PolicyEndpointRecord = RegisterPolicyEndpoint.extend({
  url: z.string().min(1).max(MAX_CALLER_URL_CHARS),
  secretHeader: z.object({ name: z.string().min(1), value: z.string() }).optional(),
  keyId: z.string().min(1),
  createdAt: z.number(),
  probe: EndpointProbe,
});
export type PolicyEndpointRecord = z.infer<typeof PolicyEndpointRecord>;

/** A registration as its key reads it back: the secret header's name only. */
export const PolicyEndpointView = PolicyEndpointRecord.omit({ secretHeader: true, keyId: true }).extend({ secretHeader: z.object({ name: z.string() }).optional() });
export type PolicyEndpointView = z.infer<typeof PolicyEndpointView>;

/**
 * Each key's registered endpoints, apart from every other key's. `put` holds the per-key limit
 * itself, atomically with the write, so concurrent registrations never pass it: a new id is
 * "created" while the key holds fewer than `limit`, else "full" (nothing written); an id the key
 * already holds is "replaced" and counts once.
 */
export interface PolicyEndpointStore {
  put(record: PolicyEndpointRecord, limit: number): Promise<"created" | "replaced" | "full">;
  get(keyId: string, id: string): Promise<PolicyEndpointRecord | undefined>;
  list(keyId: string): Promise<PolicyEndpointRecord[]>;
  delete(keyId: string, id: string): Promise<boolean>;
}

/**
 * Checks an endpoint before it is registered, through the outbound guard: protocol v2 answers its
 * policy's state; any other kind one token sampled in a token mode of its kind (the one asked for,
 * or the first the server offers), which the probe records. Throws a domain error naming what was
 * wrong (a refused URL, no ids, no token mode, no answer).
 */
export interface EndpointProber {
  probe(endpoint: RegisterPolicyEndpoint): Promise<EndpointProbe>;
}

/** The endpoints one key may hold. */
export const ENDPOINTS_PER_KEY = 100;

/** A registration as its key reads it (no secret value). */
export function endpointView(record: PolicyEndpointRecord): PolicyEndpointView {
  const { secretHeader, keyId: _key, ...rest } = record;
  return { ...rest, ...(secretHeader ? { secretHeader: { name: secretHeader.name } } : {}) };
}

/**
 * Registers (or replaces) a key's policy endpoint after probing it; the stored secret is never
 * read back. A key holds at most {@link ENDPOINTS_PER_KEY}.
 *
 * @example
 * const view = await registerPolicyEndpoint(RegisterPolicyEndpoint.parse(body), "k1", deps);
 */
export async function registerPolicyEndpoint(
  req: RegisterPolicyEndpoint,
  keyId: string,
  deps: { endpoints: PolicyEndpointStore; prober: EndpointProber; clock: { now(): number } },
): Promise<PolicyEndpointView> {
  // A cheap early answer for a full key (no probe sent); the store's write is what holds the limit.
  if (req.mode !== undefined && !KIND_MODES[req.kind].includes(req.mode))
    throw new ValidationError("policy endpoint", [`mode: ${req.kind} endpoints are sampled by ${KIND_MODES[req.kind].join(", ") || "protocol v2 itself"}, not ${req.mode}`]);
  const existing = await deps.endpoints.list(keyId);
  if (existing.length >= ENDPOINTS_PER_KEY && !existing.some((e) => e.id === req.id)) throw new EndpointLimitError(ENDPOINTS_PER_KEY);
  const probe = await deps.prober.probe(req);
  const record = PolicyEndpointRecord.parse({ ...req, keyId, createdAt: deps.clock.now(), probe });
  if ((await deps.endpoints.put(record, ENDPOINTS_PER_KEY)) === "full") throw new EndpointLimitError(ENDPOINTS_PER_KEY);
  return endpointView(record);
}

/** A key's endpoint, or NotFoundError (another key's is not found either). */
export async function ownEndpoint(keyId: string, id: string, endpoints: PolicyEndpointStore): Promise<PolicyEndpointRecord> {
  const found = await endpoints.get(keyId, id);
  if (!found) throw new NotFoundError("policy endpoint", id);
  return found;
}

/** A key already holds as many endpoints as it may. */
export class EndpointLimitError extends ConflictError {
  constructor(limit: number) {
    super(`this key holds ${limit} policy endpoints, its limit; delete one first`);
  }
}
