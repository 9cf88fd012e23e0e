import { parentPort } from "node:worker_threads";
import { startFairFauxqs } from "./fair-queues.ts";

// The body of the SQS emulator's thread (fauxqs-thread.mjs starts it): the server, stopped when the parent asks.
const server = await startFairFauxqs();
parentPort?.on("message", async (m) => {
  if (m !== "stop") return;
  await server.stop();
  process.exit(0);
});
parentPort?.postMessage({ port: server.port });
