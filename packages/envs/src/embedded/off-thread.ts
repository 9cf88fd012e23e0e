import { Worker } from "node:worker_threads";
import type { SeedInstance } from "@harness-s/core/experiment";
import type { EmbeddedSettings } from "./setup.ts";

type Reply = { id: number; instance: SeedInstance } | { id: number; error: string };

/**
 * Builds seed instances (the suite and its evolved sibling pool: seconds of CPU per seed) on a
 * worker thread, so that a process that also serves requests (`harness-s serve`, the local
 * stack) keeps answering while a run sets up seeds it has not seen. Instances come back by
 * structured clone and equal the ones built in process. The thread starts on first use, never
 * keeps the process alive, and is started again after it fails.
 *
 * @example
 * const build = offThreadInstances();
 * const instance = await build(defaultEmbeddedSettings, 7);
 */
export function offThreadInstances(): (settings: EmbeddedSettings, seed: number) => Promise<SeedInstance> {
  let worker: Worker | undefined;
  let next = 0;
  const waiting = new Map<number, { resolve: (i: SeedInstance) => void; reject: (e: Error) => void }>();
  const start = () => {
    const w = new Worker(new URL("./instance-worker.mjs", import.meta.url));
    w.unref();
    w.on("message", (reply: Reply) => {
      const pending = waiting.get(reply.id);
      waiting.delete(reply.id);
      if (waiting.size === 0) w.unref();
      if ("error" in reply) pending?.reject(new Error(`building a seed instance failed: ${reply.error}`));
      else pending?.resolve(reply.instance);
    });
    const fail = (err: Error) => {
      if (worker === w) worker = undefined;
      for (const p of waiting.values())
        p.reject(new Error(`the instance thread ended: ${err.message}`, { cause: err }));
      waiting.clear();
    };
    w.on("error", fail);
    w.on("exit", (code) => fail(new Error(`exit code ${code}`)));
    return w;
  };
  return (settings, seed) => {
    worker ??= start();
    const w = worker;
    const id = ++next;
    w.ref();
    return new Promise<SeedInstance>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      w.postMessage({ id, settings, seed });
    });
  };
}
