import type { Profile, ProfileSet } from "./profile.ts";

/** Profiles of one pool's harnesses; `put` replaces one harness's profile. */
export interface ProfileStore {
  get(poolId: string): Promise<ProfileSet>;
  put(poolId: string, profile: Profile): Promise<void>;
}
