import { describe, expect, it } from "vitest";
import { ConflictError } from "@harness-s/core";
import { LastAdminError } from "@harness-s/core/access";
import { type ApiKeyStore, type KeyAccount, type KeyEventLog, hashSecret, newApiKey } from "@harness-s/core/access";

const account = (id: string, over: Partial<KeyAccount> = {}): KeyAccount => ({
  id,
  scopes: ["route"],
  secrets: [{ hash: hashSecret(`${id}-secret`), createdAt: 1 }],
  createdAt: 1,
  version: 0,
  ...over,
});

/** What every ApiKeyStore and KeyEventLog must do; `fresh` returns empty stores. */
export function apiKeyStoreContract(
  name: string,
  fresh: () => Promise<{ keys: ApiKeyStore; keyEvents: KeyEventLog }>,
): void {
  describe(`ApiKeyStore contract: ${name}`, () => {
    it("api keys: found by the hash of the secret only", async () => {
      const s = await fresh();
      const { record } = newApiKey("k1", ["route"], 5);
      await s.keys.put(record);
      expect(await s.keys.findByHash(record.hash)).toEqual(record);
      expect(await s.keys.findByHash("0".repeat(64))).toBeUndefined();
      expect((await s.keys.get("k1"))?.secrets.map((x) => x.hash)).toEqual([record.hash]);
    });

    it("api keys: saved under a version (a stale or duplicate write is a CONFLICT), every secret of a key finds it, a dropped one nothing", async () => {
      const s = await fresh();
      const a = account("acct");
      await s.keys.save(a, undefined);
      await expect(s.keys.save(a, undefined)).rejects.toBeInstanceOf(ConflictError);
      const second = { hash: hashSecret("second"), createdAt: 2 };
      const rotated = { ...a, secrets: [{ ...a.secrets[0]!, retiresAt: 50 }, second], version: 1 };
      await s.keys.save(rotated, 0);
      await expect(s.keys.save({ ...rotated, version: 2 }, 0)).rejects.toBeInstanceOf(ConflictError);
      expect(await s.keys.findByHash(second.hash)).toMatchObject({ id: "acct", hash: second.hash });
      expect((await s.keys.findByHash(a.secrets[0]!.hash))?.retiresAt).toBe(50);
      await s.keys.save({ ...rotated, secrets: [second], revokedAt: 60, version: 2 }, 1);
      expect(await s.keys.findByHash(a.secrets[0]!.hash)).toBeUndefined();
      expect(await s.keys.findByHash(second.hash)).toMatchObject({ revokedAt: 60 });
      expect((await s.keys.get("acct"))?.version).toBe(2);
    });

    it("api keys: a secret's hash is never taken over by another key; list holds every key", async () => {
      const s = await fresh();
      const a = account("one");
      await s.keys.save(a, undefined);
      await expect(s.keys.save(account("two", { secrets: a.secrets }), undefined)).rejects.toBeInstanceOf(
        ConflictError,
      );
      await s.keys.save(account("three"), undefined);
      expect((await s.keys.findByHash(a.secrets[0]!.hash))?.id).toBe("one");
      expect((await s.keys.list()).map((k) => k.id).sort()).toEqual(["one", "three"]);
    });

    it("api keys: a write refused (a duplicate id) leaves no secret behind: another key may then hold that secret", async () => {
      const s = await fresh();
      await s.keys.save(account("taken"), undefined);
      const secret = { hash: hashSecret("fresh-secret"), createdAt: 3 };
      await expect(s.keys.save(account("taken", { secrets: [secret] }), undefined)).rejects.toBeInstanceOf(
        ConflictError,
      );
      await s.keys.save(account("other", { secrets: [secret] }), undefined);
      expect((await s.keys.findByHash(secret.hash))?.id).toBe("other");
    });

    it("api keys: the last admin key without an expiry cannot be revoked, expire or lose its scope, even by writes at once", async () => {
      const s = await fresh();
      const admin = (id: string) => account(id, { scopes: ["admin"] });
      await s.keys.save(admin("a1"), undefined);
      await s.keys.save(account("r1"), undefined);
      await s.keys.save({ ...account("r1"), revokedAt: 5, version: 1 }, 0); // a key that anchors nothing goes freely
      for (const change of [{ revokedAt: 9 }, { expiresAt: 99 }, { scopes: ["route" as const] }])
        await expect(s.keys.save({ ...admin("a1"), ...change, version: 1 }, 0)).rejects.toBeInstanceOf(LastAdminError);
      await s.keys.save(admin("a2"), undefined);
      await s.keys.save(admin("a3"), undefined);
      // Three anchors, each revoked by its own writer at once: at most two go.
      const revokes = await Promise.allSettled(
        ["a1", "a2", "a3"].map((id) => s.keys.save({ ...admin(id), revokedAt: 9, version: 1 }, 0)),
      );
      expect(revokes.filter((r) => r.status === "fulfilled")).toHaveLength(2);
      expect(revokes.find((r) => r.status === "rejected")).toMatchObject({ reason: expect.any(LastAdminError) });
      expect((await s.keys.list()).filter((k) => k.scopes.includes("admin") && k.revokedAt === undefined)).toHaveLength(
        1,
      );
    });

    it("key events: a key's own, newest first by version, at most the limit, each version once", async () => {
      const s = await fresh();
      // Written at one time: their order is the versions they wrote; one written again is one event.
      for (let i = 0; i < 5; i++)
        await s.keyEvents.append({
          keyId: "e",
          at: 100,
          version: i,
          action: i === 0 ? "created" : "updated",
          by: "admin",
          changes: { n: i },
        });
      await s.keyEvents.append({ keyId: "e", at: 100, version: 4, action: "updated", by: "admin", changes: { n: 4 } });
      await s.keyEvents.append({ keyId: "other", at: 1, version: 0, action: "created" });
      const events = await s.keyEvents.list("e", 3);
      expect(events.map((e) => e.version)).toEqual([4, 3, 2]);
      expect(events[0]).toEqual({ keyId: "e", at: 100, version: 4, action: "updated", by: "admin", changes: { n: 4 } });
    });
  });
}
