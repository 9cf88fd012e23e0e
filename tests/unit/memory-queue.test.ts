import { MemoryQueue } from "@harness-s/adapters/stores";
import { queueContract } from "../contract/queue.contract.ts";

queueContract("in-memory", async () => {
  const queue = new MemoryQueue();
  return { queue, receiveAll: async () => queue.take() };
});
