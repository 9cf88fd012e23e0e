import { takeTokens, type Bucket, type KeyRate, type RateBlocks } from "@harness-s/core/access";

/** Each key's shared rate bucket in memory: the API instances of one process (tests, the embedded API) share it. */
export class MemoryRateBlocks implements RateBlocks {
  private readonly buckets = new Map<string, Bucket>();

  async lease(keyId: string, rate: KeyRate, now: number, want: number): Promise<{ granted: number; waitMs: number }> {
    const { bucket, granted, waitMs } = takeTokens(this.buckets.get(keyId), now, rate, want);
    this.buckets.set(keyId, bucket);
    return { granted, waitMs };
  }
}
