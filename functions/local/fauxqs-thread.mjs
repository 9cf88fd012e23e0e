// The SQS emulator on a thread of its own (see fauxqs-thread.ts): every queue request of the
// local stack's workers is answered here, not on the event loop of the process's API.
import { parentPort } from "node:worker_threads";
import { startFauxqs } from "fauxqs";

const server = await startFauxqs({ port: 0, host: "127.0.0.1", logger: false });
parentPort.on("message", async (m) => {
  if (m !== "stop") return;
  await server.stop();
  process.exit(0);
});
parentPort.postMessage({ port: server.port });
