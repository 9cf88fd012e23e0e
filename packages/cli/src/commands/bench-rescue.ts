import type { SeedInstance } from "@harness-s/core/experiment";
import type { embeddedSetup } from "@harness-s/envs";
import { cpuWindow, type CpuCounters } from "./cpu-split.ts";
import { startRescueBench } from "./bench-rescue-stack.ts";
import { startMemoryRescueBench } from "./bench-rescue-memory.ts";
import type { RescueBench } from "./bench-rescue-parts.ts";

/** Rollouts in flight at once, as the bench measures them. */
export const RESCUE_CONCURRENCY = [1, 8, 32] as const;
/** The scripted policy's wait per turn (ms): none (the service's overhead alone), and a model's realistic latency. */
export const RESCUE_TURN_MS = [0, 50] as const;

/** One measured (latency, concurrency): rollouts/s both ways, and the CPU each cost per rollout, by process. */
export interface RescueBenchRow {
  turnMs: number;
  inFlight: number;
  service: number;
  inProcess: number;
  /**
   * CPU ms per rollout through the service: the API's thread (the rest of this process: the API,
   * and the bench's client, policy and environment servers), the workers' thread, DynamoDB
   * Local's JVM, fauxqs's thread; and `all`, this process's (every thread); undefined where /proc cannot be read.
   */
  cpuMsPerRollout: { api?: number; workers?: number; dynamoDbLocal?: number; fauxqs?: number; all?: number };
  /** CPU ms per rollout in process (this process: the runner, the policy and the environment). */
  inProcessCpuMs?: number;
  /** Cores busy during the service's window: these four together, and the whole machine (other processes too). */
  coresBusy: { ours?: number; machine?: number };
}

/**
 * Caller-rescue rollouts/s at 1, 8 and 32 in flight, for a scripted policy that answers at once and
 * one that takes 50 ms a turn, through the service (POST /v1/rescues over HTTP → the dispatch queue
 * on fauxqs → the dispatch pollers on the workers' thread → DynamoDB Local → GET until done), next
 * to the same rollouts run in process with the same runner (the same scripted protocol-v2 policy,
 * the same OpenEnv server: a tool call, then submit), with the CPU each cost, process by process;
 * then the same rows for the same service on in-memory stores and an in-memory queue
 * ({@link startMemoryRescueBench}): what the service's own code costs, and so what the local
 * stack's store and queue requests cost beyond it.
 */
export async function benchRescue(
  instance: SeedInstance,
  setup: ReturnType<typeof embeddedSetup>,
  seconds: number,
  turnMs: readonly number[] = RESCUE_TURN_MS,
): Promise<string[]> {
  const stack = await measureRescue(await startRescueBench(instance, setup, turnMs), seconds, turnMs);
  const memory = await measureRescue(await startMemoryRescueBench(instance, setup, turnMs), seconds, turnMs);
  return [
    ...formatRescueBench(stack.rows),
    formatWarmup(stack.warmed),
    ...formatMemoryRows(memory.rows),
    formatWarmup(memory.warmed),
    ...formatBound(stack.rows, memory.rows),
  ];
}

/**
 * How both ways are warmed before anything is timed, as a served process long since started is:
 * windows of the figure's seconds each way at `inFlight` and the fastest latency, until the
 * service's rate in a window rises by no more than `settled` over the window before (at least
 * `minWindows`, at most `maxWindows`). Node's and DynamoDB Local's JITs take tens of seconds to
 * settle: measured after 3 rescues, the service's rate at 0 ms a turn, 32 in flight, was 134/s,
 * and 166–179/s once warm.
 */
export const RESCUE_WARMUP = { inFlight: 32, settled: 0.03, minWindows: 4, maxWindows: 20 } as const;

/**
 * What the warm-up took: its windows, its seconds, the service's rate in its last window, and whether that rate had
 * settled.
 */
export interface RescueWarmup {
  windows: number;
  seconds: number;
  rate: number;
  settled: boolean;
}

/**
 * The rows of {@link benchRescue} at one service: each latency, each concurrency, measured in one run once warm; the
 * bench is closed after.
 */
export async function measureRescue(
  bench: RescueBench,
  seconds: number,
  turnMs: readonly number[],
): Promise<{ rows: RescueBenchRow[]; warmed: RescueWarmup }> {
  try {
    const warmed = await warmUp(bench, Math.min(...turnMs), seconds);
    const rows: RescueBenchRow[] = [];
    for (const ms of turnMs) {
      const runner = await bench.runner(ms);
      for (const n of RESCUE_CONCURRENCY) {
        // The two ways in turns, a slice of the time each: a load that comes and goes on the machine weighs on both
        // alike.
        let service = NOTHING;
        let local = NOTHING;
        for (let i = 0; i < SLICES; i++) {
          service = added(
            service,
            await measured(bench.cpu, () => rounds((k) => bench.viaService(ms, k), n, seconds / SLICES)),
          );
          local = added(
            local,
            await measured(bench.cpu, () => rounds((k) => bench.inProcess(runner, k), n, seconds / SLICES)),
          );
        }
        rows.push(rowOf(ms, n, service, local));
      }
    }
    return { rows, warmed };
  } finally {
    await bench.close();
  }
}

/** {@link RESCUE_WARMUP}: both ways in turns, a window each, until the service's rate has settled. */
async function warmUp(bench: RescueBench, turnMs: number, seconds: number): Promise<RescueWarmup> {
  const { inFlight, settled, minWindows, maxWindows } = RESCUE_WARMUP;
  const runner = await bench.runner(turnMs);
  const t0 = performance.now();
  for (let windows = 1, last = 0; ; windows++) {
    const service = await rounds((k) => bench.viaService(turnMs, k), inFlight, seconds);
    await rounds((k) => bench.inProcess(runner, k), inFlight, seconds);
    const rate = service.rollouts / service.seconds;
    const steady = windows >= minWindows && rate <= last * (1 + settled);
    if (steady || windows >= maxWindows)
      return { windows, seconds: (performance.now() - t0) / 1000, rate, settled: steady };
    last = rate;
  }
}

/** Slices each figure's time is measured in, the service's and in-process's in turns. */
const SLICES = 3;

type Rounds = { rollouts: number; seconds: number };
type Measured = Rounds & { cpu: Record<string, number | undefined> };
const NOTHING: Measured = { rollouts: 0, seconds: 0, cpu: {} };

const added = (a: Measured, b: Measured): Measured => ({
  rollouts: a.rollouts + b.rollouts,
  seconds: a.seconds + b.seconds,
  cpu: Object.fromEntries(Object.entries(b.cpu).map(([k, v]) => [k, a === NOTHING ? v : combine(1, a.cpu[k], v)])),
});

async function measured(counters: CpuCounters, run: () => Promise<Rounds>): Promise<Measured> {
  const window = cpuWindow(counters);
  const r = await run();
  return { ...r, cpu: window() };
}

/** `a` less each of `b`, or plus each of `b` (`sign` 1); undefined if any is. */
const combine = (sign: 1 | -1, a: number | undefined, ...b: (number | undefined)[]) =>
  b.reduce<number | undefined>((x, y) => (x === undefined || y === undefined ? undefined : x + sign * y), a);

function rowOf(turnMs: number, inFlight: number, service: Measured, local: Measured): RescueBenchRow {
  const { process, workers, dynamoDbLocal, fauxqs, machine } = service.cpu;
  const perRollout = (s: number | undefined, m: Measured = service) =>
    s === undefined ? undefined : (s * 1000) / m.rollouts;
  const ours = combine(1, process, dynamoDbLocal);
  const busy = (s: number | undefined) => (s === undefined ? undefined : s / service.seconds);
  return {
    turnMs,
    inFlight,
    service: service.rollouts / service.seconds,
    inProcess: local.rollouts / local.seconds,
    cpuMsPerRollout: {
      api: perRollout(combine(-1, process, workers, fauxqs)),
      workers: perRollout(workers),
      dynamoDbLocal: perRollout(dynamoDbLocal),
      fauxqs: perRollout(fauxqs),
      all: perRollout(process),
    },
    inProcessCpuMs: perRollout(local.cpu.process, local),
    coresBusy: { ours: busy(ours), machine: busy(machine) },
  };
}

/**
 * Rounds of `inFlight` rollouts at once, back to back, for `seconds` (at least one): the rollouts and the time they
 * took.
 */
async function rounds(round: (n: number) => Promise<number>, inFlight: number, seconds: number): Promise<Rounds> {
  const t0 = performance.now();
  let rollouts = 0;
  do rollouts += await round(inFlight);
  while (performance.now() - t0 < seconds * 1000);
  return { rollouts, seconds: (performance.now() - t0) / 1000 };
}

/**
 * The bench's header and one line per row. Rates to 3 decimals: the ratio printed beside them
 * then follows from the printed rates to 0.002 even at a few rollouts/s.
 */
export function formatRescueBench(rows: readonly RescueBenchRow[]): string[] {
  const f = cpuFigure;
  return [
    "rescue rollouts/s          (caller's protocol-v2 policy, scripted; OpenEnv server; through the service vs in process; CPU ms per rollout through",
    "                            the service: the API's thread (with the bench's client, policy and environment) + the workers' thread / DynamoDB Local / fauxqs)",
    ...rows.map((r) => {
      const c = r.cpuMsPerRollout;
      return (
        `${rowHead(r)}   CPU ms/rollout ${f(c.api)} + ${f(c.workers)} / ${f(c.dynamoDbLocal)} / ${f(c.fauxqs)} (in process ${f(r.inProcessCpuMs)})` +
        `   cores busy ${f(r.coresBusy.ours, 2)} (machine ${f(r.coresBusy.machine, 2)})`
      );
    }),
  ];
}

/** The bench's last line: how long it warmed before its rows were measured. */
export function formatWarmup(w: RescueWarmup): string {
  const { inFlight, settled } = RESCUE_WARMUP;
  const why = w.settled
    ? `risen by at most ${settled * 100}% over the window before`
    : "still rising: the rows may read low";
  return `  warmed ${w.seconds.toFixed(1)} s first: ${w.windows} windows each way at ${inFlight} in flight, the service's last ${w.rate.toFixed(1)} rollouts/s (${why})`;
}

/**
 * The rows of the same service on in-memory stores and queue: its rate, in process's, their ratio, and this process's
 * CPU per rollout each way.
 */
export function formatMemoryRows(rows: readonly RescueBenchRow[]): string[] {
  return [
    "  the same service on in-memory stores and an in-memory queue, in this one thread (no DynamoDB Local, fauxqs or AWS SDK: what its own code costs;",
    "  CPU ms per rollout of this process)",
    ...rows.map(
      (r) =>
        `${rowHead(r)}   CPU ms/rollout ${cpuFigure(r.cpuMsPerRollout.all)} (in process ${cpuFigure(r.inProcessCpuMs)})`,
    ),
  ];
}

/** A row's latency, concurrency, both rates and their ratio, as both blocks print them. */
const rowHead = (r: RescueBenchRow) =>
  `  ${String(r.turnMs).padStart(3)} ms a turn ${String(r.inFlight).padStart(2)} in flight  ${r.service.toFixed(3).padStart(10)}   in process ${r.inProcess.toFixed(3).padStart(10)}` +
  `   service/in-process ${serviceRatio(r)}`;

/** A row's rate through the service over its rate in process, as printed. */
const serviceRatio = (r: RescueBenchRow) => (r.service / r.inProcess).toFixed(3);

/** A CPU figure (or cores busy) to `digits` decimals; "n/a" where it could not be read. */
function cpuFigure(x: number | undefined, digits = 1): string {
  return x === undefined ? "n/a" : x.toFixed(digits);
}

/** One line per latency: the ratio at each concurrency over the local stack and over in-memory stores, side by side. */
export function formatBound(stack: readonly RescueBenchRow[], memory: readonly RescueBenchRow[]): string[] {
  const ratio = (r: RescueBenchRow | undefined) => (r ? serviceRatio(r) : "n/a");
  return [...new Set(stack.map((r) => r.turnMs))].map((ms) => {
    const at = (rows: readonly RescueBenchRow[]) =>
      RESCUE_CONCURRENCY.map((n) => ratio(rows.find((r) => r.turnMs === ms && r.inFlight === n))).join(" | ");
    return `  ${String(ms).padStart(3)} ms a turn, ${RESCUE_CONCURRENCY.join(" | ")} in flight: service/in-process ${at(stack)} over DynamoDB Local and fauxqs, ${at(memory)} over in-memory stores`;
  });
}
