// A key's requests let in over 10 s by 1, 4 and 16 API instances, when each keeps its own bucket against when each
// leases blocks from the key's one shared bucket (SharedKeyRate): a client sending 400 requests a second in turn to
// the instances, on a manual clock (no wall time). Usage: node --import tsx scripts/rate-across-instances.ts
import { ManualClock } from "@harness-s/core";
import { KeyRateLimiter, RateLimitedError, SharedKeyRate, type KeyRate, type RateGate } from "@harness-s/core/access";
import { MemoryRateBlocks } from "@harness-s/adapters/stores";

const SECONDS = 10;
const EVERY_MS = 2.5;

async function letIn(gates: readonly RateGate[], clock: ManualClock, rate: KeyRate): Promise<number> {
  let n = 0;
  for (let t = 0, i = 0; t < SECONDS * 1000; t += EVERY_MS, i++) {
    try {
      await gates[i % gates.length]!.take({ id: "k", rate });
      n++;
    } catch (err) {
      if (!(err instanceof RateLimitedError)) throw err;
    }
    clock.advance(EVERY_MS);
  }
  return n;
}

for (const rate of [
  { perSecond: 10, burst: 10 },
  { perSecond: 200, burst: 50 },
]) {
  const bound = rate.perSecond * SECONDS + rate.burst;
  for (const instances of [1, 4, 16]) {
    const ownClock = new ManualClock(0);
    const own = await letIn(
      Array.from({ length: instances }, () => new KeyRateLimiter(ownClock)),
      ownClock,
      rate,
    );
    const clock = new ManualClock(0);
    const store = new MemoryRateBlocks();
    const shared = await letIn(
      Array.from({ length: instances }, () => new SharedKeyRate(store, clock)),
      clock,
      rate,
    );
    console.log(
      `rate ${rate.perSecond}/s burst ${rate.burst}, ${String(instances).padStart(2)} instances: own buckets let in ${own}, shared ${shared} (rate × ${SECONDS} s + burst: ${bound})`,
    );
  }
}
