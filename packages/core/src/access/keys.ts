import { z } from "zod";
import { NotFoundError } from "../errors.ts";
import { hasUnshowable } from "../util/printable.ts";

/**
 * Whether `key` may read a record owned by `ownerKeyId`: its owner, or an admin key; a record with
 * no owner (made inside a training run) is for admin keys only.
 */
export function visibleTo(ownerKeyId: string | undefined, key: { id: string; scopes: readonly string[] }): boolean {
  return key.scopes.includes("admin") || (ownerKeyId !== undefined && ownerKeyId === key.id);
}

/**
 * A store of records a key owns (`keyId`), as `key` sees it: a record it may not read
 * ({@link visibleTo}) is not found, exactly as one that does not exist. The one place "owned by
 * this key, else 404" is decided.
 *
 * @example
 * const run = await ownedBy(deps.experiments, key, "experiment").get(id); // NotFoundError for another key's
 */
export function ownedBy<R extends { keyId?: string | undefined }>(
  store: { get(id: string): Promise<R | undefined> },
  key: { id: string; scopes: readonly string[] },
  what: string,
) {
  return {
    get: async (id: string): Promise<R> => {
      const found = await store.get(id);
      if (!found || !visibleTo(found.keyId, key)) throw new NotFoundError(what, id);
      return found;
    },
  };
}

export const Scope = z.enum([
  "route",
  "gateway",
  "rescues",
  "experiments",
  "pools:read",
  "pools:write",
  "profiles:read",
  "profiles:write",
  "admin",
]);
export type Scope = z.infer<typeof Scope>;

/** Bounds of a key's settings, declared once (the API's schemas and the stores read them). */
export const KEY_LIMITS = {
  labelChars: 100,
  /** The most requests per second a key may be given, and the largest burst. */
  maxPerSecond: 10_000,
  maxBurst: 100_000,
  /** The longest grace a rotated-out secret may keep working (a week). */
  maxGraceSeconds: 7 * 24 * 3600,
  /** Grace of a rotation that names none. */
  defaultGraceSeconds: 3600,
  /** Secrets one key holds at once (its current one and those in their grace). */
  maxSecrets: 8,
  /** The slowest rate a key may be given: one request in 1,000 s (a Retry-After is never longer). */
  minPerSecond: 0.001,
  /** A key's request quota and USD budget: at most this many requests, from a micro-dollar to a billion dollars. */
  maxRequestQuota: 1_000_000_000_000,
  minBudgetUsd: 0.000_001,
  maxBudgetUsd: 1_000_000_000,
} as const;

/** A key's label: shown in lists and terminals, so printable text only. */
export const KeyLabel = z
  .string()
  .max(KEY_LIMITS.labelChars)
  .refine(
    (s) => !hasUnshowable(s),
    "label: control characters and bidirectional overrides are not allowed (they rewrite what a terminal shows)",
  );

/** A key's scopes: each at most once. */
export const KeyScopes = z
  .array(Scope)
  .min(1)
  .max(Scope.options.length)
  .refine((s) => new Set(s).size === s.length, "scopes: each scope at most once");

/** A key's rate: `perSecond` requests a second on average, up to `burst` at once (a token bucket). */
export const KeyRate = z.object({
  perSecond: z.number().min(KEY_LIMITS.minPerSecond).max(KEY_LIMITS.maxPerSecond),
  burst: z.number().int().min(1).max(KEY_LIMITS.maxBurst),
});
export type KeyRate = z.infer<typeof KeyRate>;

/** What an operator sets on a key: everything but its identity, secrets and history. */
export const KeySettings = z.object({
  label: KeyLabel.optional(),
  scopes: KeyScopes,
  /** Requests allowed in total (pay-per-use quota); undefined = unlimited. */
  requestQuota: z.number().int().positive().max(KEY_LIMITS.maxRequestQuota).optional(),
  /**
   * What the key may spend in total, in USD at the tariff; a request quoted above what is left is a 402 before any
   * work.
   */
  budgetUsd: z.number().min(KEY_LIMITS.minBudgetUsd).max(KEY_LIMITS.maxBudgetUsd).optional(),
  /** Requests past this rate are a 429 with Retry-After; undefined = no rate limit. */
  rate: KeyRate.optional(),
  /** When the key stops working (ms since the epoch); undefined = never. */
  expiresAt: z.number().int().nonnegative().optional(),
});
export type KeySettings = z.infer<typeof KeySettings>;

/**
 * Settings as a store holds them: read as they were written, before labels, scopes and limits were held to today's
 * bounds ({@link KeyLabel}, {@link KeyScopes}, {@link KEY_LIMITS}).
 */
const StoredKeySettings = KeySettings.extend({
  label: z.string().max(KEY_LIMITS.labelChars).optional(),
  scopes: z.array(Scope).min(1),
  requestQuota: z.number().int().positive().optional(),
  budgetUsd: z.number().positive().optional(),
  rate: z.object({ perSecond: z.number().positive(), burst: z.number().int().min(1) }).optional(),
});

/** One secret of a key, by its hash: the current one has no `retiresAt`; a rotated-out one works until then. */
export const KeySecret = z.object({
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.number().int().nonnegative(),
  retiresAt: z.number().int().nonnegative().optional(),
});
export type KeySecret = z.infer<typeof KeySecret>;

/**
 * A key as stored: its settings, its secrets (hashes only), when and by whom it was made, and whether it is revoked.
 */
export const KeyAccount = StoredKeySettings.extend({
  id: z.string().min(1).max(64),
  secrets: z.array(KeySecret).min(1).max(KEY_LIMITS.maxSecrets),
  createdAt: z.number().int().nonnegative(),
  /** The key that made it (undefined: made by the deployment or a local command). */
  createdBy: z.string().optional(),
  /** When it was revoked: every secret of it then fails (401); its usage and records are kept. */
  revokedAt: z.number().int().nonnegative().optional(),
  /** Bumped by each change: a change written against an older version is refused (CONFLICT). */
  version: z.number().int().nonnegative(),
});
export type KeyAccount = z.infer<typeof KeyAccount>;

/**
 * A key as a request presents it: its settings, the hash of the secret it was presented with, and
 * what may stop that secret working (the key revoked or expired, the secret retired).
 */
export const ApiKeyRecord = StoredKeySettings.extend({
  id: z.string().min(1),
  /** SHA-256 of the secret, hex; the secret itself is never stored. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  revokedAt: z.number().int().nonnegative().optional(),
  /** When this secret stops working (it was rotated out); undefined = while the key works. */
  retiresAt: z.number().int().nonnegative().optional(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecord>;

/** The record a key presents with one of its secrets. */
export function presented(account: KeyAccount, secret: KeySecret): ApiKeyRecord {
  const { secrets: _secrets, createdAt: _createdAt, createdBy: _createdBy, version: _version, ...settings } = account;
  return { ...settings, hash: secret.hash, ...(secret.retiresAt !== undefined ? { retiresAt: secret.retiresAt } : {}) };
}

/** A key made from one record (`put`): its only secret the record's hash. */
export function accountOf(key: ApiKeyRecord, now = 0): KeyAccount {
  const { hash, retiresAt: _r, ...settings } = key;
  return { ...settings, secrets: [{ hash, createdAt: now }], createdAt: now, version: 0 };
}

/**
 * Whether a key keeps the deployment open: an admin key, not revoked, with no expiry. A deployment
 * that has one always keeps one ({@link ApiKeyStore.save}): no revoke, expiry or loss of scope,
 * however many run at once, leaves it locked out.
 */
export const anchorsAdmin = (account: Pick<KeyAccount, "scopes" | "revokedAt" | "expiresAt">): boolean =>
  account.scopes.includes("admin") && account.revokedAt === undefined && account.expiresAt === undefined;

/**
 * Where keys live: each key's account by its id, and each secret's hash pointing at its key. A
 * hash no account lists (rotated out and forgotten, or replaced) finds nothing. The store keeps,
 * in the same atomic write as each account, which keys anchor the deployment ({@link anchorsAdmin}):
 * a write that would take the last anchor away is refused with a `LastAdminError`.
 */
export interface ApiKeyStore {
  /** Creates or replaces a key from one record: its only secret that record's hash. */
  put(key: ApiKeyRecord): Promise<void>;
  /** The key a secret's hash belongs to, as that secret presents it; undefined for a hash no key lists. */
  findByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  get(id: string): Promise<KeyAccount | undefined>;
  /** Every key (an operator's list: bounded by how many keys a deployment issues). */
  list(): Promise<KeyAccount[]>;
  /**
   * Writes `account` if the stored one is still at `expected` (undefined: none stored yet), with
   * its secrets' hashes indexed, in one atomic write: a CONFLICT otherwise (nothing written), a
   * `LastAdminError` when `account` stops anchoring the deployment ({@link anchorsAdmin}) and no
   * other key anchors it.
   */
  save(account: KeyAccount, expected: number | undefined): Promise<void>;
}
