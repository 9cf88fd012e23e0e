import {
  emptyProfile,
  type ProfileLedger,
  type Profile,
  type ProfileSet,
  type ProfileStore,
} from "@harness-s/core/profile";
import { frozenCopy } from "../frozen-copy.ts";

export class MemoryProfileStore implements ProfileStore, ProfileLedger {
  private readonly byPool = new Map<string, ProfileSet>();
  private readonly processed = new Set<string>();

  async applyOnce(
    messageId: string,
    poolId: string,
    harnessId: string,
    update: (current: Profile) => Profile,
  ): Promise<"applied" | "duplicate"> {
    if (this.processed.has(messageId)) return "duplicate";
    const set = this.byPool.get(poolId) ?? {};
    const next = update(structuredClone(set[harnessId] ?? emptyProfile(harnessId, 0)));
    set[harnessId] = frozenCopy(next);
    this.byPool.set(poolId, set);
    this.processed.add(messageId);
    return "applied";
  }

  async get(poolId: string): Promise<ProfileSet> {
    return { ...(this.byPool.get(poolId) ?? {}) };
  }

  async put(poolId: string, profile: Profile): Promise<void> {
    const set = this.byPool.get(poolId) ?? {};
    set[profile.harnessId] = frozenCopy(profile);
    this.byPool.set(poolId, set);
  }
}
