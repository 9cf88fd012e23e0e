import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { Id } from "../names.ts";
import { CallerUrl, MAX_CALLER_URL_CHARS, SecretHeader } from "../outbound/caller-url.ts";
import { KIND_ALLOWED_MODES, PolicyEndpointKind, TokenMode } from "./endpoint-kinds.ts";

export const RegisterPolicyEndpoint = z.strictObject({
  id: Id,
  kind: PolicyEndpointKind,
  url: CallerUrl,
  policy: z.string().min(1).max(200),
  secretHeader: SecretHeader.optional(),
  /**
   * The token mode to use (one of the kind's): the probe checks that one only. Default: the first of the kind's the
   * server offers.
   */
  mode: TokenMode.optional(),
});
export type RegisterPolicyEndpoint = z.infer<typeof RegisterPolicyEndpoint>;

/**
 * What a registration's probe found: the weights' version the endpoint reports (null when it
 * reports none) and, for a kind without versions, the token mode rescues sample it by (a record
 * from before modes were recorded samples by chat completions).
 */
export const EndpointProbe = z.object({
  weightVersion: z.number().int().min(0).nullable(),
  checkedAt: z.number(),
  mode: TokenMode.optional(),
  /**
   * The base model's served names as the server lists them (`GET /v1/models`, the cards without a parent, in order):
   * vLLM answers any of them with the first (vllm@00153c8b7948077ebdfc5bfa14e403da41aaea6d vllm/entrypoints/openai/models/serving.py `model_name()`
   * → `base_model_paths[0].name`). Absent where the server lists none.
   */
  servedNames: z.array(z.string().min(1).max(256)).max(64).optional(),
});
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
export const PolicyEndpointView = PolicyEndpointRecord.omit({ secretHeader: true, keyId: true }).extend({
  secretHeader: z.object({ name: z.string() }).optional(),
});
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
  if (req.mode !== undefined && !KIND_ALLOWED_MODES[req.kind].includes(req.mode))
    throw new ValidationError("policy endpoint", [
      `mode: ${req.kind} endpoints are sampled by ${KIND_ALLOWED_MODES[req.kind].join(", ") || "protocol v2 itself"}, not ${req.mode}`,
    ]);
  const existing = await deps.endpoints.list(keyId);
  if (existing.length >= ENDPOINTS_PER_KEY && !existing.some((e) => e.id === req.id))
    throw new EndpointLimitError(ENDPOINTS_PER_KEY);
  const probe = await deps.prober.probe(req);
  const record = PolicyEndpointRecord.parse({ ...req, keyId, createdAt: deps.clock.now(), probe });
  if ((await deps.endpoints.put(record, ENDPOINTS_PER_KEY)) === "full") throw new EndpointLimitError(ENDPOINTS_PER_KEY);
  return endpointView(record);
}

/** A key's endpoint, or NotFoundError (another key's is not found either). */
export async function ownEndpoint(
  keyId: string,
  id: string,
  endpoints: PolicyEndpointStore,
): Promise<PolicyEndpointRecord> {
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
