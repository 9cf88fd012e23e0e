import {
  MemoryApiKeyStore,
  MemoryKeyEventLog,
  MemoryBallotStore,
  MemoryDecisionStore,
  MemoryExperimentStore,
  MemoryExperimentStepStore,
  MemoryPolicyEndpointStore,
  MemoryPoolStore,
  MemoryProfileStore,
  MemoryRescueJobStore,
  MemoryRolloutStore,
  MemoryUsageMeter,
  MemoryRescueSlots,
  MemoryGatewayEpisodeStore,
  MemoryPoolEvolutionStore,
} from "@harness-s/adapters/stores";
import { storeContract } from "../contract/stores.contract.ts";
import { gatewayEpisodeStoreContract } from "../contract/gateway-episodes.contract.ts";

gatewayEpisodeStoreContract("in-memory", async () => new MemoryGatewayEpisodeStore());

storeContract("in-memory", async (clock) => ({
  pools: new MemoryPoolStore(),
  profiles: new MemoryProfileStore(),
  decisions: new MemoryDecisionStore(),
  keys: new MemoryApiKeyStore(),
  keyEvents: new MemoryKeyEventLog(),
  meter: new MemoryUsageMeter(clock),
  rollouts: new MemoryRolloutStore(),
  jobs: new MemoryRescueJobStore(),
  ballots: new MemoryBallotStore(),
  experiments: new MemoryExperimentStore(),
  experimentSteps: new MemoryExperimentStepStore(),
  endpoints: new MemoryPolicyEndpointStore(),
  rescueSlots: new MemoryRescueSlots(),
  poolEvolutions: new MemoryPoolEvolutionStore(),
}));

import { describe, expect, it } from "vitest";
import { createPool } from "@harness-s/core";
import { makeSpec } from "../factories.ts";

describe("in-memory stores", () => {
  it("hand out frozen snapshots: mutating a read throws and never changes the store", async () => {
    const pools = new MemoryPoolStore();
    const pool = createPool("p", makeSpec(), [makeSpec({ id: "sib", provenance: { direction: "recon" } })]);
    await pools.put(pool);
    pool.siblings.length = 0;
    const read = (await pools.get("p"))!;
    expect(read.siblings).toHaveLength(1);
    expect(() => {
      (read.siblings as unknown[]).push(1);
    }).toThrow(TypeError);
  });
});
