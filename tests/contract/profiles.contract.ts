import { describe, expect, it } from "vitest";
import { emptyProfile, type ProfileLedger, type ProfileStore } from "@harness-s/core/profile";

/** What every ProfileStore (and its ledger) must do; `fresh` returns an empty store. */
export function profileStoreContract(
  name: string,
  fresh: () => Promise<{ profiles: ProfileStore & ProfileLedger }>,
): void {
  describe(`ProfileStore contract: ${name}`, () => {
    it("profiles: one per harness per pool, replaced on put", async () => {
      const s = await fresh();
      await s.profiles.put("p1", emptyProfile("sib-a", 1));
      await s.profiles.put("p1", { ...emptyProfile("sib-a", 2), byFamily: { app: { attempts: 3, successes: 1 } } });
      await s.profiles.put("p1", emptyProfile("sib-b", 2));
      await s.profiles.put("p2", emptyProfile("sib-a", 9));
      const set = await s.profiles.get("p1");
      expect(Object.keys(set).sort()).toEqual(["sib-a", "sib-b"]);
      expect(set["sib-a"]!.policyVersion).toBe(2);
      expect(set["sib-a"]!.byFamily.app).toEqual({ attempts: 3, successes: 1 });
      expect(await s.profiles.get("none")).toEqual({});
    });

    it("ledger: applies each message id once, and loses no update under concurrent writers", async () => {
      const s = await fresh();
      const bump = (p: Parameters<Parameters<ProfileLedger["applyOnce"]>[3]>[0]) => ({
        ...p,
        byFamily: { app: { attempts: (p.byFamily.app?.attempts ?? 0) + 1, successes: 0 } },
      });
      expect(await s.profiles.applyOnce("m1", "p", "h", bump)).toBe("applied");
      expect(await s.profiles.applyOnce("m1", "p", "h", bump)).toBe("duplicate");
      await Promise.all(Array.from({ length: 6 }, (_, i) => s.profiles.applyOnce(`c${i}`, "p", "h", bump)));
      expect((await s.profiles.get("p")).h!.byFamily.app!.attempts).toBe(7);
    });
  });
}
