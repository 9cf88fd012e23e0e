import { createHash, randomBytes } from "node:crypto";
import { ForbiddenError, QuotaExceededError, UnauthenticatedError } from "../errors.ts";
import type { ApiKeyRecord, ApiKeyStore, Scope, UsageMeter } from "./ports.ts";

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
 * Authenticates a bearer secret, checks the scope, and meters the request; with a quota, counting
 * the request and checking the quota are one atomic step, so concurrent requests never pass it.
 *
 * @example
 * const key = await authorize("Bearer hs_…", "route", { keys, meter });
 */
export async function authorize(authorization: string | undefined, scope: Scope, deps: { keys: ApiKeyStore; meter: UsageMeter }): Promise<ApiKeyRecord> {
  const key = await authenticate(authorization, deps.keys);
  if (!key.scopes.includes(scope) && !key.scopes.includes("admin")) throw new ForbiddenError(scope);
  if (key.requestQuota === undefined) await deps.meter.add(key.id, { requests: 1 });
  else if (!(await deps.meter.addWithin(key.id, "requests", 1, key.requestQuota))) throw new QuotaExceededError(key.requestQuota, key.requestQuota);
  return key;
}
