import { createHash, randomBytes } from "node:crypto";
import { ForbiddenError } from "../errors.ts";
import { QuotaExceededError, UnauthenticatedError } from "./errors.ts";
import type { ApiKeyRecord, ApiKeyStore, Scope } from "./keys.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";
import { type Clock, systemClock } from "../util/clock.ts";
import type { RateGate } from "./rate.ts";

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * A new random key secret and the record to store (which keeps only its hash). Secrets come from
 * the OS's cryptographic randomness on purpose, never from the seeded Rng used by algorithms.
 */
export function newApiKey(
  id: string,
  scopes: Scope[],
  requestQuota?: number,
): { secret: string; record: ApiKeyRecord } {
  const { secret, hash } = newSecret();
  return { secret, record: { id, hash, scopes, requestQuota } };
}

/** A new random secret (from the OS's cryptographic randomness, never the seeded Rng) and its hash. */
export function newSecret(): { secret: string; hash: string } {
  const secret = `hs_${randomBytes(24).toString("base64url")}`;
  return { secret, hash: hashSecret(secret) };
}

/** Whether a presented key works at `now`: not revoked, not expired, its secret not retired. */
export function usable(key: ApiKeyRecord, now: number): boolean {
  return (
    key.revokedAt === undefined &&
    (key.expiresAt === undefined || now < key.expiresAt) &&
    (key.retiresAt === undefined || now < key.retiresAt)
  );
}

/**
 * Finds the key a bearer secret belongs to, without checking scope or quota: a 401 for an unknown
 * secret, a revoked or expired key, or a secret rotated out past its grace (all alike: a caller
 * learns nothing of a key it cannot use).
 */
export async function authenticate(
  authorization: string | undefined,
  keys: ApiKeyStore,
  clock: Clock = systemClock,
): Promise<ApiKeyRecord> {
  const secret = authorization?.match(/^Bearer\s+(\S+)$/i)?.[1];
  if (!secret) throw new UnauthenticatedError();
  const key = await keys.findByHash(hashSecret(secret));
  if (!key || !usable(key, clock.now())) throw new UnauthenticatedError();
  return key;
}

/**
 * Authenticates a bearer secret, checks the scope and takes a token of the key's rate (a 429 past
 * it, before its quota counts the request). A key with a quota is counted here, in one
 * atomic step with the quota check (concurrent requests never pass it); every other key's request
 * is counted by the caller in the one usage write it makes when the request ends
 * ({@link requestUsage}), so a request costs one meter write.
 *
 * @example
 * const key = await authorize("Bearer hs_…", "route", { keys, meter });
 * await meter.add(key.id, requestUsage(key, { ballots: 3 }));
 */
export async function authorize(
  authorization: string | undefined,
  scope: Scope,
  deps: AdmitDeps,
): Promise<ApiKeyRecord> {
  const key = await authenticate(authorization, deps.keys, deps.clock);
  if (!key.scopes.includes(scope) && !key.scopes.includes("admin")) throw new ForbiddenError(scope, key.id);
  await admit(key, deps);
  return key;
}

/** What lets a known key's request in: its rate (shared buckets, or this instance's) and its request quota. */
export type AdmitDeps = { keys: ApiKeyStore; meter: UsageMeter; clock?: Clock; rate?: RateGate };

/**
 * A known key's request let in: a token of its rate taken (a 429 past it), then, with a quota, counted against it (a
 * 429 past it).
 */
export async function admit(key: ApiKeyRecord, deps: AdmitDeps): Promise<void> {
  await deps.rate?.take(key);
  if (key.requestQuota !== undefined && !(await deps.meter.addWithin(key.id, "requests", 1, key.requestQuota)))
    throw new QuotaExceededError(key.requestQuota, key.requestQuota);
}

/**
 * What one authorised request adds to its key's usage when it ends: the request itself (unless `authorize` counted it
 * against a quota) and what it used.
 */
export function requestUsage(key: ApiKeyRecord, used: Partial<Usage>): Partial<Usage> {
  return { ...used, requests: (used.requests ?? 0) + (key.requestQuota === undefined ? 1 : 0) };
}
