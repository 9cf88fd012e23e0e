import { z } from "zod";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../errors.ts";
import { BeyondOwnLimitsError, SelfRaiseError } from "./errors.ts";
import type { Clock } from "../util/clock.ts";
import { newSecret } from "./auth.ts";
import type { KeyEvent, KeyEventLog } from "./events.ts";
import { KEY_EVENTS_PAGE } from "./events.ts";
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  type KeyAccount,
  KEY_LIMITS,
  KeyRate,
  KeySettings,
  Scope,
} from "./keys.ts";

/**
 * How long a change to a key (revoked, its scopes or limits changed) may take to reach every API
 * instance: each caches a key this long. An expiry or a rotated-out secret's grace ends on time
 * everywhere (the cached key carries them).
 */
export const KEY_CHANGE_SECONDS = 5;

const isoTime = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));

/** `POST /v1/keys`: a new key's settings (`expiresAt` an ISO 8601 time). */
export const CreateKeyRequest = KeySettings.extend({ expiresAt: isoTime.optional() }).strict();
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

/**
 * `PATCH /v1/keys/{id}`: the settings to change; `null` removes an optional one (no quota, no budget, no rate, no
 * expiry, no label).
 */
export const UpdateKeyRequest = z
  .object({
    label: KeySettings.shape.label.unwrap().nullable(),
    scopes: KeySettings.shape.scopes,
    requestQuota: KeySettings.shape.requestQuota.unwrap().nullable(),
    budgetUsd: KeySettings.shape.budgetUsd.unwrap().nullable(),
    rate: KeyRate.nullable(),
    expiresAt: isoTime.nullable(),
  })
  .partial()
  .strict();
export type UpdateKeyRequest = z.infer<typeof UpdateKeyRequest>;

/** `POST /v1/keys/{id}/rotate`: how long the secrets it replaces keep working. */
export const RotateKeyRequest = z
  .object({
    graceSeconds: z.number().int().min(0).max(KEY_LIMITS.maxGraceSeconds).default(KEY_LIMITS.defaultGraceSeconds),
  })
  .strict();
export type RotateKeyRequest = z.infer<typeof RotateKeyRequest>;

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** A key as the API shows it: never a secret nor a secret's hash. */
export const KeyView = z.object({
  id: z.string(),
  label: z.string().optional(),
  scopes: z.array(Scope),
  requestQuota: z.number().optional(),
  budgetUsd: z.number().optional(),
  rate: KeyRate.optional(),
  expiresAt: z.string().optional(),
  createdAt: z.string(),
  createdBy: z.string().optional(),
  revokedAt: z.string().optional(),
  status: z.enum(["active", "expired", "revoked"]),
  /** Its secrets by when they were made; a rotated-out one with when it stops working. */
  secrets: z.array(z.object({ createdAt: z.string(), retiresAt: z.string().optional() })),
});
export type KeyView = z.infer<typeof KeyView>;

export function keyView(a: KeyAccount, now: number): KeyView {
  const defined = <T extends object>(o: T) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  return defined({
    id: a.id,
    label: a.label,
    scopes: a.scopes,
    requestQuota: a.requestQuota,
    budgetUsd: a.budgetUsd,
    rate: a.rate,
    expiresAt: iso(a.expiresAt),
    createdAt: iso(a.createdAt)!,
    createdBy: a.createdBy,
    revokedAt: iso(a.revokedAt),
    status:
      a.revokedAt !== undefined ? "revoked" : a.expiresAt !== undefined && now >= a.expiresAt ? "expired" : "active",
    secrets: a.secrets
      .filter((s) => s.retiresAt === undefined || s.retiresAt > now)
      .map((s) => defined({ createdAt: iso(s.createdAt)!, retiresAt: iso(s.retiresAt) })),
  });
}

/** An event as the API shows it (its time ISO 8601). */
export const KeyEventView = z.object({
  keyId: z.string(),
  at: z.string(),
  action: z.string(),
  by: z.string().optional(),
  changes: z.record(z.string(), z.unknown()).optional(),
});
export type KeyEventView = z.infer<typeof KeyEventView>;

export interface KeyDeps {
  keys: ApiKeyStore;
  events: KeyEventLog;
  clock: Clock;
  newId: (kind: string) => string;
}

/** The key acting: its id, scopes and limits (an operator's local command acts as no key: `undefined`, unlimited). */
type Actor = Pick<ApiKeyRecord, "id" | "scopes" | "requestQuota" | "budgetUsd" | "rate" | "expiresAt"> | undefined;

const isAdmin = (actor: Actor) => actor === undefined || actor.scopes.includes("admin");

function requireAdmin(actor: Actor): void {
  if (!isAdmin(actor)) throw new ForbiddenError("admin");
}

async function record(deps: KeyDeps, event: Omit<KeyEvent, "at">): Promise<void> {
  await deps.events.append({ ...event, at: deps.clock.now() });
}

/** The settings an event shows: what was set, ISO times, and nothing secret (settings hold no secret). */
function shown(settings: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(settings).map(([k, v]) => [k, k === "expiresAt" && typeof v === "number" ? iso(v) : v]),
  );
}

/** A 403 when `next` holds a scope or a limit beyond the actor's own (a local command is unlimited). */
function ensureWithinActor(actor: Actor, next: KeySettings, what: string): void {
  if (actor && raises(actor, next)) throw new BeyondOwnLimitsError(what);
}

/** A key's expiry must lie ahead: a key is never made, nor changed into, one already expired (revoke it instead). */
function ensureAhead(expiresAt: number | null | undefined, now: number): void {
  if (typeof expiresAt === "number" && expiresAt <= now)
    throw new ValidationError("key", [
      `expiresAt: ${new Date(expiresAt).toISOString()} is not in the future (to stop a key now, revoke it)`,
    ]);
}

/**
 * Makes a key (admin keys only, within their own scopes and limits): its id and its secret, shown this once; only the
 * secret's hash is kept.
 */
export async function createKey(
  body: CreateKeyRequest,
  actor: Actor,
  deps: KeyDeps,
): Promise<{ key: KeyView; secret: string }> {
  requireAdmin(actor);
  const now = deps.clock.now();
  ensureAhead(body.expiresAt, now);
  ensureWithinActor(actor, body, "makes keys");
  const { secret, hash } = newSecret();
  const account: KeyAccount = {
    ...body,
    id: deps.newId("key"),
    secrets: [{ hash, createdAt: now }],
    createdAt: now,
    ...(actor ? { createdBy: actor.id } : {}),
    version: 0,
  };
  await deps.keys.save(account, undefined);
  await record(deps, {
    keyId: account.id,
    version: account.version,
    action: "created",
    ...(actor ? { by: actor.id } : {}),
    changes: shown(body),
  });
  return { key: keyView(account, now), secret };
}

/** A key an actor may see: an admin any, another key only itself (any other is not found). */
async function visibleKey(id: string, actor: Actor, deps: KeyDeps): Promise<KeyAccount> {
  const account = isAdmin(actor) || actor?.id === id ? await deps.keys.get(id) : undefined;
  if (!account) throw new NotFoundError("key", id);
  return account;
}

export async function getKey(id: string, actor: Actor, deps: KeyDeps): Promise<KeyView> {
  return keyView(await visibleKey(id, actor, deps), deps.clock.now());
}

/** Every key for an admin; any other key sees itself. */
export async function listKeys(actor: Actor, deps: KeyDeps): Promise<KeyView[]> {
  const now = deps.clock.now();
  if (isAdmin(actor))
    return (await deps.keys.list())
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      .map((a) => keyView(a, now));
  return [keyView(await visibleKey(actor!.id, actor, deps), now)];
}

/** Whether `next` gives a key anything `before` did not: a scope, a larger (or no) quota, budget, rate or expiry. */
export function raises(before: KeySettings, next: KeySettings): boolean {
  const more = (a: number | undefined, b: number | undefined) => a !== undefined && (b === undefined || b > a);
  const scopes = !before.scopes.includes("admin") && next.scopes.some((s) => !before.scopes.includes(s));
  const rate =
    before.rate !== undefined &&
    (next.rate === undefined || next.rate.perSecond > before.rate.perSecond || next.rate.burst > before.rate.burst);
  return (
    scopes ||
    rate ||
    more(before.requestQuota, next.requestQuota) ||
    more(before.budgetUsd, next.budgetUsd) ||
    more(before.expiresAt, next.expiresAt)
  );
}

function applied(before: KeyAccount, patch: UpdateKeyRequest): KeyAccount {
  const next: Record<string, unknown> = { ...before };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k];
    else if (v !== undefined) next[k] = v;
  }
  return { ...(next as KeyAccount), version: before.version + 1 };
}

/**
 * Changes a key's settings (admin keys only, within their own scopes and limits; none raises its
 * own). The last admin key without an expiry keeps its scope and gets none (the store's rule:
 * a `LastAdminError`, 409).
 */
export async function updateKey(id: string, patch: UpdateKeyRequest, actor: Actor, deps: KeyDeps): Promise<KeyView> {
  requireAdmin(actor);
  ensureAhead(patch.expiresAt, deps.clock.now());
  const before = await visibleKey(id, actor, deps);
  if (before.revokedAt !== undefined) throw new ConflictError(`key ${id} is revoked`);
  const next = applied(before, patch);
  if (actor?.id === id && raises(before, next)) throw new SelfRaiseError();
  ensureWithinActor(actor, next, "changes keys");
  await deps.keys.save(next, before.version);
  await record(deps, {
    keyId: id,
    version: next.version,
    action: "updated",
    ...(actor ? { by: actor.id } : {}),
    changes: shown(patch),
  });
  return keyView(next, deps.clock.now());
}

/**
 * A new secret for a key (an admin's for any key, a key's for itself); the secrets it replaces keep
 * working for `graceSeconds`, then stop. Secrets already past their grace are forgotten.
 */
export async function rotateKey(
  id: string,
  body: RotateKeyRequest,
  actor: Actor,
  deps: KeyDeps,
): Promise<{ key: KeyView; secret: string }> {
  const before = await visibleKey(id, actor, deps);
  if (before.revokedAt !== undefined) throw new ConflictError(`key ${id} is revoked`);
  // The new secret goes to the actor: taking one for a key with more than its own would be taking that key.
  if (actor?.id !== id) ensureWithinActor(actor, before, "takes the secrets of keys");
  const now = deps.clock.now();
  const retireAt = now + body.graceSeconds * 1000;
  const { secret, hash } = newSecret();
  const kept = before.secrets
    .filter((s) => s.retiresAt === undefined || s.retiresAt > now)
    .map((s) => ({ ...s, retiresAt: Math.min(s.retiresAt ?? retireAt, retireAt) }))
    .slice(-(KEY_LIMITS.maxSecrets - 1));
  const next: KeyAccount = { ...before, secrets: [...kept, { hash, createdAt: now }], version: before.version + 1 };
  await deps.keys.save(next, before.version);
  await record(deps, {
    keyId: id,
    version: next.version,
    action: "rotated",
    ...(actor ? { by: actor.id } : {}),
    changes: { graceSeconds: body.graceSeconds },
  });
  return { key: keyView(next, now), secret };
}

/**
 * Revokes a key (admin keys only): every secret of it is a 401 from then on; its usage and records
 * stay. The last admin key without an expiry is kept (the store's rule, atomic under concurrent revokes).
 */
export async function revokeKey(id: string, actor: Actor, deps: KeyDeps): Promise<KeyView> {
  requireAdmin(actor);
  const before = await visibleKey(id, actor, deps);
  const now = deps.clock.now();
  if (before.revokedAt !== undefined) return keyView(before, now);
  const next: KeyAccount = { ...before, revokedAt: now, version: before.version + 1 };
  await deps.keys.save(next, before.version);
  await record(deps, { keyId: id, version: next.version, action: "revoked", ...(actor ? { by: actor.id } : {}) });
  return keyView(next, now);
}

/** A key's operations, newest first (admin keys only). */
export async function keyEvents(id: string, actor: Actor, deps: KeyDeps): Promise<KeyEventView[]> {
  requireAdmin(actor);
  await visibleKey(id, actor, deps);
  return (await deps.events.list(id, KEY_EVENTS_PAGE)).map(({ version: _v, ...e }) => ({ ...e, at: iso(e.at)! }));
}

/**
 * A deployment's first admin key, from the hash of a secret its operator keeps (a secret of the
 * stacks): made once under `id` if no key holds that hash; a key revoked since is left revoked.
 */
export async function bootstrapAdminKey(
  hash: string,
  deps: Pick<KeyDeps, "keys" | "events" | "clock">,
  id = "bootstrap-admin",
): Promise<"created" | "present"> {
  if (await deps.keys.findByHash(hash)) return "present";
  const now = deps.clock.now();
  const account: KeyAccount = {
    id,
    label: "the deployment's first admin key",
    scopes: ["admin"],
    secrets: [{ hash, createdAt: now }],
    createdAt: now,
    version: 0,
  };
  try {
    await deps.keys.save(account, undefined);
  } catch (err) {
    if (err instanceof ConflictError) return "present";
    throw err;
  }
  await deps.events.append({ keyId: id, at: now, version: 0, action: "created", changes: { scopes: ["admin"] } });
  return "created";
}
