import { readFileSync, readdirSync } from "node:fs";

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux the bench runs on). */
const TICKS_PER_SECOND = 100;

/**
 * utime + stime of a /proc `stat` file, in seconds; undefined where there is no /proc (not Linux) or the task is gone.
 */
function statSeconds(path: string): number | undefined {
  try {
    const text = readFileSync(path, "utf8");
    // The fields after the command name (in parentheses, which may hold spaces): state is the first, utime the 12th,
    // stime the 13th.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** CPU seconds a process has used so far (all its threads). */
export function processCpuSeconds(pid: number): number | undefined {
  return statSeconds(`/proc/${pid}/stat`);
}

/** CPU seconds this process (every thread) has used so far, user and system. */
export function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** The ids of this process's threads now (empty where there is no /proc). */
export function threadIds(): Set<number> {
  try {
    return new Set(readdirSync("/proc/self/task").map(Number));
  } catch {
    return new Set();
  }
}

/** CPU seconds the given threads of this process have used so far (a thread gone counts 0). */
export function threadsCpuSeconds(tids: ReadonlySet<number>): number | undefined {
  if (tids.size === 0) return undefined;
  let sum = 0;
  for (const tid of tids) sum += statSeconds(`/proc/self/task/${tid}/stat`) ?? 0;
  return sum;
}

/** This process's children whose command is `comm` (DynamoDB Local's JVM: `java`). */
export function childPids(comm: string): number[] {
  try {
    return readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        const text = readFileSync(`/proc/${d}/stat`, "utf8");
        const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
        return name === comm && Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]) === process.pid;
      })
      .map(Number);
  } catch {
    return [];
  }
}

/** The whole machine's busy CPU seconds so far (every process's, other users' too), from /proc/stat. */
export function machineBusySeconds(): number | undefined {
  try {
    const [, ...ticks] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
    // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
    const busy = ticks
      .slice(0, 8)
      .map(Number)
      .filter((_, i) => i !== 3 && i !== 4);
    return busy.reduce((a, b) => a + b, 0) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Named CPU counters (seconds so far; undefined where one cannot be read). */
export type CpuCounters = Record<string, () => number | undefined>;

/**
 * Starts a window over `counters`: the function it returns gives each counter's CPU seconds since
 * the start (undefined where it could not be read at either end).
 *
 * @example
 * const stop = cpuWindow({ self: () => process.cpuUsage().user / 1e6 });
 * await work();
 * stop(); // { self: 0.42 }
 */
export function cpuWindow(counters: CpuCounters): () => Record<string, number | undefined> {
  const before = Object.fromEntries(Object.entries(counters).map(([name, read]) => [name, read()]));
  return () =>
    Object.fromEntries(
      Object.entries(counters).map(([name, read]) => {
        const [a, b] = [before[name], read()];
        return [name, a === undefined || b === undefined ? undefined : b - a];
      }),
    );
}
