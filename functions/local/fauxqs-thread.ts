import { Worker } from "node:worker_threads";

/**
 * fauxqs (the SQS emulator) started on a thread of its own, on a free loopback port: a stack
 * whose workers send and receive hundreds of messages a second keeps that load off the thread
 * that serves the API. `stop` ends the server and the thread.
 *
 * @example
 * const sqs = await startFauxqsThread();
 * new SQSClient({ endpoint: `http://127.0.0.1:${sqs.port}`, … });
 */
export async function startFauxqsThread(): Promise<{ port: number; stop: () => Promise<void> }> {
  const worker = new Worker(new URL("./fauxqs-thread.mjs", import.meta.url));
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("message", (m: { port: number }) => resolve(m.port));
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the fauxqs thread exited with ${code} before it listened`)));
  });
  return {
    port,
    stop: async () => {
      const exited = new Promise<void>((r) => worker.once("exit", () => r()));
      worker.postMessage("stop");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
      await worker.terminate();
    },
  };
}
