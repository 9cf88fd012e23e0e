import { MemoryApiKeyStore, MemoryDecisionStore, MemoryPoolStore, MemoryProfileStore, MemoryUsageMeter } from "@harness-s/adapters";
import { storeContract } from "../contract/stores.contract.ts";

storeContract("in-memory", async () => ({
  pools: new MemoryPoolStore(),
  profiles: new MemoryProfileStore(),
  decisions: new MemoryDecisionStore(),
  keys: new MemoryApiKeyStore(),
  meter: new MemoryUsageMeter(),
}));
