import { z } from "zod";

/**
 * Whether `key` may read a record owned by `ownerKeyId`: its owner, or an admin key; a record with
 * no owner (made inside a training run) is for admin keys only.
 */
export function visibleTo(ownerKeyId: string | undefined, key: { id: string; scopes: readonly string[] }): boolean {
  return key.scopes.includes("admin") || (ownerKeyId !== undefined && ownerKeyId === key.id);
}

export const Scope = z.enum(["route", "gateway", "rescues", "experiments", "pools:read", "pools:write", "profiles:read", "profiles:write", "admin"]);
export type Scope = z.infer<typeof Scope>;

export const ApiKeyRecord = z.object({
  id: z.string().min(1),
  /** SHA-256 of the secret, hex; the secret itself is never stored. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  scopes: z.array(Scope).min(1),
  /** Requests allowed in total (pay-per-use quota); undefined = unlimited. */
  requestQuota: z.number().int().positive().optional(),
  /** What the key may spend in total, in USD at the tariff; a request quoted above what is left is a 402 before any work. */
  budgetUsd: z.number().positive().optional(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecord>;

export interface ApiKeyStore {
  put(key: ApiKeyRecord): Promise<void>;
  findByHash(hash: string): Promise<ApiKeyRecord | undefined>;
}
