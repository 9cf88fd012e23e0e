import { describe, expect, it } from "vitest";
import { ConflictError } from "@harness-s/core";
import {
  PoolEvolveRequest,
  zeroEvolutionUsage,
  type PoolEvolutionRecord,
  type PoolEvolutionStore,
} from "@harness-s/core/pools";

const tool = (name: string, submit = false) => ({ name, description: "x".repeat(2_000), submit });
/**
 * A job whose request is as large as a request may be in dev tasks (50, each with its tools): the store keeps it whole.
 */
function job(id: string, over: Partial<PoolEvolutionRecord> = {}): PoolEvolutionRecord {
  const devTasks = Array.from({ length: 50 }, (_, i) => ({
    id: `t${i}`,
    family: "app",
    tools: [tool("search"), tool("read"), tool("submit", true)],
  }));
  return {
    id,
    keyId: "k1",
    request: PoolEvolveRequest.parse({
      endpoint: "ep",
      environment: { kind: "openenv", url: "https://envs.example.com/" },
      devTasks,
    }),
    weightVersion: 3,
    status: "queued",
    createdAt: 1,
    updatedAt: 1,
    attempts: 0,
    progress: { done: 0, total: 10, label: "queued" },
    usage: zeroEvolutionUsage,
    ...over,
  };
}

/** What every PoolEvolutionStore must do; `fresh` returns an empty store. */
export function poolEvolutionStoreContract(
  name: string,
  fresh: () => Promise<{ poolEvolutions: PoolEvolutionStore }>,
): void {
  describe(`PoolEvolutionStore contract: ${name}`, () => {
    it("pool evolutions: created once, whole; claimed by one coordinator at a time; re-claimable after the lease; a finished job never", async () => {
      const s = (await fresh()).poolEvolutions;
      await s.create(job("e1"));
      await expect(s.create(job("e1"))).rejects.toBeInstanceOf(ConflictError);
      expect(await s.get("e1")).toEqual(job("e1"));
      const claims = await Promise.all([s.claim("e1", 100, 200), s.claim("e1", 100, 200)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(claims.find(Boolean)).toMatchObject({ status: "running", leaseUntil: 200 });
      expect(await s.claim("e1", 150, 250)).toBeUndefined();
      expect((await s.claim("e1", 201, 300))!.leaseUntil).toBe(300);
      const pool = { id: "e1", version: "v", siblings: 2 };
      await s.save(
        job("e1", {
          status: "done",
          attempts: 2,
          pool,
          usage: { ...zeroEvolutionUsage, rollouts: 40, policyTokens: 900 },
        }),
      );
      expect(await s.claim("e1", 10_000, 20_000)).toBeUndefined();
      expect(await s.get("e1")).toMatchObject({
        status: "done",
        attempts: 2,
        pool,
        usage: { rollouts: 40, policyTokens: 900 },
      });
      expect(await s.claim("missing", 1, 2)).toBeUndefined();
      expect(await s.get("missing")).toBeUndefined();
    });

    it("pool evolutions: a cancel ends a queued job at once (never claimed after), marks a running one (kept through the worker's saves), leaves an ended one", async () => {
      const s = (await fresh()).poolEvolutions;
      await s.create(job("q"));
      expect(await s.requestCancel("q", 50)).toMatchObject({ status: "cancelled", updatedAt: 50 });
      expect(await s.claim("q", 60, 100)).toBeUndefined();
      await s.create(job("r"));
      const running = (await s.claim("r", 10, 1_000))!;
      expect(await s.cancelRequested("r")).toBe(false);
      expect(await s.requestCancel("r", 20)).toMatchObject({ status: "running", cancelRequested: true });
      await s.save({ ...running, progress: { done: 1, total: 10, label: "round 1 of 10" } });
      expect(await s.cancelRequested("r")).toBe(true);
      expect(await s.get("r")).toMatchObject({ cancelRequested: true, progress: { done: 1 } });
      await s.create(job("d"));
      await s.save(job("d", { status: "done" }));
      expect(await s.requestCancel("d", 30)).toMatchObject({ status: "done" });
      expect(await s.cancelRequested("d")).toBe(false);
      expect(await s.requestCancel("missing", 1)).toBeUndefined();
    });
  });
}
