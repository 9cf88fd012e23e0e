// The SQS emulator on a thread of its own (see fauxqs-thread.ts): every queue request of the
// local stack's workers is answered here, not on the event loop of the process's API. Its
// standard queues deliver as SQS fair queues do (fair-queues.ts).
import { parentPort } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
const { startFairFauxqs } = await import("./fair-queues.ts");
const server = await startFairFauxqs();
parentPort.on("message", async (m) => {
  if (m !== "stop") return;
  await server.stop();
  process.exit(0);
});
parentPort.postMessage({ port: server.port });
