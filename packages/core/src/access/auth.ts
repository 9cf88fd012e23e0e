import { createHash, randomBytes } from "node:crypto";
import { ForbiddenError, QuotaExceededError, UnauthenticatedError } from "../errors.ts";
import type { ApiKeyRecord, ApiKeyStore, Scope } from "./keys.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/**
 * A new random key secret and the record to store (which keeps only its hash). Secrets come from
 * the OS's cryptographic randomness on purpose, never from the seeded Rng used by algorithms.
 */
export function newApiKey(id: string, scopes: Scope[], requestQuota?: number): { secret: string; record: ApiKeyRecord } {
  const secret = `hs_${randomBytes(24).toString("base64url")}`;
  return { secret, record: { id, hash: hashSecret(secret), scopes, requestQuota } };
}

/** Finds the key a bearer secret belongs to, without checking scope or quota. */
export async function authenticate(authorization: string | undefined, keys: ApiKeyStore): Promise<ApiKeyRecord> {
  const secret = authorization?.match(/^Bearer\s+(\S+)$/i)?.[1];
  if (!secret) throw new UnauthenticatedError();
  const key = await keys.findByHash(hashSecret(secret));
  if (!key) throw new UnauthenticatedError();
  return key;
}

/**
 * Authenticates a bearer secret and checks the scope. A key with a quota is counted here, in one
 * atomic step with the quota check (concurrent requests never pass it); every other key's request
 * is counted by the caller in the one usage write it makes when the request ends
 * ({@link requestUsage}), so a request costs one meter write.
 *
 * @example
 * const key = await authorize("Bearer hs_…", "route", { keys, meter });
 * await meter.add(key.id, requestUsage(key, { ballots: 3 }));
 */
export async function authorize(authorization: string | undefined, scope: Scope, deps: { keys: ApiKeyStore; meter: UsageMeter }): Promise<ApiKeyRecord> {
  const key = await authenticate(authorization, deps.keys);
  if (!key.scopes.includes(scope) && !key.scopes.includes("admin")) throw new ForbiddenError(scope);
  if (key.requestQuota !== undefined && !(await deps.meter.addWithin(key.id, "requests", 1, key.requestQuota))) throw new QuotaExceededError(key.requestQuota, key.requestQuota);
  return key;
}

/** What one authorised request adds to its key's usage when it ends: the request itself (unless `authorize` counted it against a quota) and what it used. */
export function requestUsage(key: ApiKeyRecord, used: Partial<Usage>): Partial<Usage> {
  return { ...used, requests: (used.requests ?? 0) + (key.requestQuota === undefined ? 1 : 0) };
}
