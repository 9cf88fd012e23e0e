import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import type { EventLogger, LogEvent } from "@harness-s/core/observability";
import { startLocalWorkers, type LocalWiring, type LocalWorkerOptions, type WorkerName } from "./workers.ts";
import type { WorkerProcessesSpec } from "./worker-processes.ts";

/**
 * The local stack's workers on a thread of their own: `module` is the thread's entry, which calls
 * {@link runWorkersThread} with how to build the workers' options from `data` (plain data: a
 * function cannot cross threads). A process that also serves the API (`harness-s serve`) then
 * trains, rolls out and votes off the API's event loop.
 */
export interface WorkersThreadSpec {
  module: URL;
  data?: unknown;
  /** Workers run as processes of their own instead of on this thread (`serve --dispatch-processes`). */
  processes?: Omit<WorkerProcessesSpec, "data">;
}

const WORKER_NAMES: readonly WorkerName[] = ["profile", "dispatch", "vote", "coordinator"];

/** How long the workers may take to stop (a poll in flight, a training step) before the thread is terminated. */
const STOP_GRACE_MS = 5_000;

type FromThread =
  | { kind: "ready" }
  | { kind: "error"; message: string }
  | { kind: "log"; line: string }
  | { kind: "event"; fields: LogEvent }
  | { kind: "stored"; jobId: string; index: number };

/**
 * Starts the workers' thread and resolves once its pollers run. A thread that ends without being
 * asked to is started again a second later (what it was running is redelivered by its queues).
 * With `events`, the thread's workers' events reach it here (to be written and counted on this thread);
 * `onStored` hears each rollout its dispatch worker stores, by its job and slot.
 */
export async function startWorkersThread(
  spec: WorkersThreadSpec,
  wiring: LocalWiring,
  log: (line: string) => void,
  events?: EventLogger,
  onStored?: (jobId: string, index: number) => void,
): Promise<{ stop: () => Promise<void> }> {
  let stopping = false;
  let current: Worker;
  const launch = () =>
    new Promise<Worker>((resolve, reject) => {
      const only = WORKER_NAMES.filter((n) => !spec.processes?.count[n]);
      const w = new Worker(spec.module, {
        workerData: { wiring, data: spec.data, events: events !== undefined, only },
      });
      let ready = false;
      w.on("message", (m: FromThread) => {
        if (m.kind === "stored") onStored?.(m.jobId, m.index);
        else if (m.kind === "log") log(m.line);
        else if (m.kind === "event") events?.event(m.fields);
        else if (m.kind === "ready") {
          ready = true;
          resolve(w);
        } else reject(new Error(`the workers' thread failed to start: ${m.message}`));
      });
      w.on("error", (err) => (ready ? log(`the workers' thread failed: ${err.message}`) : reject(err)));
      w.on("exit", (code) => {
        if (!ready) return reject(new Error(`the workers' thread exited with ${code} before it started`));
        if (stopping) return;
        log(`the workers' thread exited with ${code}; starting it again`);
        setTimeout(() => {
          if (!stopping)
            launch().then(
              (next) => {
                current = next;
              },
              (err) => log(String(err)),
            );
        }, 1_000).unref();
      });
    });
  current = await launch();
  return {
    stop: async () => {
      stopping = true;
      const exited = new Promise<void>((r) => current.once("exit", () => r()));
      current.postMessage("stop");
      await Promise.race([exited, new Promise((r) => setTimeout(r, STOP_GRACE_MS).unref())]);
      await current.terminate();
    },
  };
}

/**
 * The body of a workers' thread entry: builds the options from the data it was given, runs the
 * workers, reports readiness (or the error), and stops them when asked.
 *
 * @example
 * // my-workers.ts, started with startLocalStack({ …, workersOn: { module: new URL("./my-workers.mjs", import.meta.url), data } })
 * await runWorkersThread(async (data) => ({ tasks, policies, prepareExperiment }));
 */
export async function runWorkersThread(build: (data: unknown) => Promise<LocalWorkerOptions>): Promise<void> {
  if (isMainThread || !parentPort) throw new Error("runWorkersThread runs in a worker thread");
  const port = parentPort;
  const { wiring, data, events, only } = workerData as {
    wiring: LocalWiring;
    data: unknown;
    events: boolean;
    only: WorkerName[];
  };
  const post = (m: FromThread) => port.postMessage(m);
  try {
    const opts = await build(data);
    const workers = await startLocalWorkers(wiring, {
      ...opts,
      only,
      log: (line) => post({ kind: "log", line }),
      onRolloutStored: (jobId, index) => post({ kind: "stored", jobId, index }),
      ...(events ? { logger: { event: (fields) => post({ kind: "event", fields }) } } : {}),
    });
    port.on("message", async (m) => {
      if (m !== "stop") return;
      await workers.stop();
      process.exit(0);
    });
    port.postMessage({ kind: "ready" } satisfies FromThread);
  } catch (err) {
    port.postMessage({ kind: "error", message: err instanceof Error ? err.message : String(err) } satisfies FromThread);
    process.exit(1);
  }
}
