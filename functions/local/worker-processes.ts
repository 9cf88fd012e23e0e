import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { PlaceStats } from "@harness-s/adapters/stores";
import type { LocalWiring, LocalWorkerOptions, WorkerName } from "./workers.ts";
import { startLocalWorkers } from "./workers.ts";
import { DISPATCH_CONCURRENCY } from "../../infra/settings.ts";

/**
 * Workers run as OS processes of their own, as Lambda runs each invocation: `module` is the processes' entry, which
 * calls {@link runWorkerProcess} with how to build the workers' options from `data` (the workers' thread's data);
 * `count` processes of each named worker receive from its queue at once, each with its own clients and caches.
 */
export interface WorkerProcessesSpec {
  module: URL;
  data?: unknown;
  count: Partial<Record<WorkerName, number>>;
}

const NO_STATS: PlaceStats = { holds: 0, writes: 0, conflicts: 0 };

/** How long a process may take to stop (a batch in flight) before it is killed. */
const STOP_GRACE_MS = 5_000;
/** How long after a process ended unasked a new one starts in its place (a new invocation). */
const RESTART_MS = 500;

type ToChild =
  | { kind: "start"; wiring: LocalWiring; data: unknown; worker: WorkerName; invocations: number }
  | "stop"
  | "stats";
type FromChild =
  | { kind: "ready" }
  | { kind: "error"; message: string }
  | { kind: "log"; line: string }
  | { kind: "stored"; jobId: string; index: number }
  | { kind: "stats"; places: PlaceStats };

/** The running worker processes: their pids by worker, and stop (each asked, then killed past its grace). */
export interface WorkerProcesses {
  /** The worker's processes running now (one killed is left out until its successor has started). */
  pids: (worker: WorkerName) => number[];
  /** Processes that ended unasked and were started again, by worker (a kill, a crash). */
  restarts: (worker: WorkerName) => number;
  /** What the worker's running processes' running places met so far (holds, writes, conflicts), summed. */
  placeStats: (worker: WorkerName) => Promise<PlaceStats>;
  stop: () => Promise<void>;
}

/**
 * Starts `spec.count[name]` processes of each named worker, sharing between them the invocations one process would run
 * (dispatch: `DISPATCH_CONCURRENCY` in all); resolves once each receives. A process that ends unasked is started again
 * (what it held is redelivered by its queue after the visibility timeout). Each process ends when this one does (its
 * IPC channel closes).
 */
export async function startWorkerProcesses(
  spec: WorkerProcessesSpec,
  wiring: LocalWiring,
  log: (line: string) => void,
  onStored?: (jobId: string, index: number) => void,
): Promise<WorkerProcesses> {
  let stopping = false;
  const running = new Map<WorkerName, ChildProcess[]>();
  const restarted = new Map<WorkerName, number>();
  const launch = (worker: WorkerName, slot: number, invocations: number) =>
    new Promise<ChildProcess>((resolve, reject) => {
      const child = fork(fileURLToPath(spec.module), [], {
        execArgv: [],
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      let ready = false;
      child.on("message", (m: FromChild) => {
        if (m.kind === "stored") onStored?.(m.jobId, m.index);
        else if (m.kind === "stats") child.emit("stats", m.places);
        else if (m.kind === "log") log(m.line);
        else if (m.kind === "ready") {
          ready = true;
          resolve(child);
        } else reject(new Error(`a ${worker} process failed to start: ${m.message}`));
      });
      child.on("exit", (code, signal) => {
        if (!ready) return reject(new Error(`a ${worker} process exited with ${code ?? signal} before it started`));
        if (stopping) return;
        log(`a ${worker} process (pid ${child.pid}) ended with ${code ?? signal}; starting another`);
        restarted.set(worker, (restarted.get(worker) ?? 0) + 1);
        setTimeout(() => {
          if (stopping) return;
          launch(worker, slot, invocations).then(
            (next) => {
              running.get(worker)![slot] = next;
            },
            (err) => log(String(err)),
          );
        }, RESTART_MS).unref();
      });
      child.send({ kind: "start", wiring, data: spec.data, worker, invocations } satisfies ToChild);
    });
  const stop = async () => {
    stopping = true;
    const children = [...running.values()].flat();
    await Promise.all(children.map(stopChild));
  };
  try {
    for (const [worker, count] of Object.entries(spec.count) as [WorkerName, number][]) {
      const invocations = Math.max(1, Math.ceil(invocationsOf(worker) / count));
      running.set(worker, []);
      for (let slot = 0; slot < count; slot++) running.get(worker)!.push(await launch(worker, slot, invocations));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    pids: (worker) =>
      (running.get(worker) ?? []).filter((c) => c.exitCode === null && c.signalCode === null).map((c) => c.pid!),
    restarts: (worker) => restarted.get(worker) ?? 0,
    placeStats: async (worker) => {
      const live = (running.get(worker) ?? []).filter((c) => c.connected);
      const each = await Promise.all(
        live.map(
          (c) =>
            new Promise<PlaceStats>((resolve) => {
              c.once("stats", resolve);
              c.send("stats" satisfies ToChild);
            }),
        ),
      );
      return each.reduce(
        (a, b) => ({ holds: a.holds + b.holds, writes: a.writes + b.writes, conflicts: a.conflicts + b.conflicts }),
        { holds: 0, writes: 0, conflicts: 0 },
      );
    },
    stop,
  };
}

/** The invocations at once a worker has in all (its Lambda's concurrency; the coordinator's one per process). */
const invocationsOf = (worker: WorkerName) => (worker === "dispatch" ? DISPATCH_CONCURRENCY : 1);

/** Asks a process to stop, and kills it past {@link STOP_GRACE_MS}. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    if (child.connected) child.send("stop" satisfies ToChild);
    else child.kill("SIGKILL");
  });
}

/**
 * The body of a worker process's entry: waits for what to run, builds the options from the data it was given, runs
 * that one worker's pollers, reports readiness (or the error), and stops when asked or when its parent goes.
 *
 * @example
 * // my-dispatch.ts, named by startLocalStack({ …, workersOn: { module, data, processes: { module: myDispatchUrl, count: { dispatch: 4 } } } })
 * await runWorkerProcess(async (data) => ({ tasks, policies }));
 */
export function runWorkerProcess(build: (data: unknown) => Promise<LocalWorkerOptions>): void {
  const send = (m: FromChild) => process.send?.(m);
  // The parent's end: this process ends with it (its batches in flight are redelivered). A Ctrl-C reaches the whole
  // process group: the parent stops this one in order (its pollers, then its meter) instead.
  process.on("disconnect", () => process.exit(0));
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => undefined);
  let workers: Awaited<ReturnType<typeof startLocalWorkers>> | undefined;
  process.on("message", async (m: ToChild) => {
    if (m === "stats") return void send({ kind: "stats", places: workers?.placeStats() ?? NO_STATS });
    if (m === "stop") {
      await workers?.stop();
      process.exit(0);
    }
    try {
      const opts = await build(m.data);
      workers = await startLocalWorkers(m.wiring, {
        ...opts,
        only: [m.worker],
        ...(m.worker === "dispatch"
          ? { dispatchConcurrency: m.invocations }
          : { coordinatorConcurrency: m.invocations }),
        log: (line) => send({ kind: "log", line }),
        onRolloutStored: (jobId, index) => send({ kind: "stored", jobId, index }),
      });
      send({ kind: "ready" });
    } catch (err) {
      send({ kind: "error", message: err instanceof Error ? err.message : String(err) });
      process.exit(1);
    }
  });
}
