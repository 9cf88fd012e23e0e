import type { ChildProcess } from "node:child_process";

const owned = new Set<ChildProcess>();
let hooked = false;

/**
 * Ties a child process's life to this one: on any exit of this process (a normal end,
 * `process.exit`, an uncaught error, a handled signal) every child still running is killed, so
 * nothing a command started outlives it. (A SIGKILL of this process can run no code: children
 * that must survive even that watch their parent, as the policy worker's `--exit-with-parent` does.)
 *
 * @example
 * const proc = ownChild(spawn("java", args));
 */
export function ownChild<P extends ChildProcess>(proc: P): P {
  owned.add(proc);
  proc.once("exit", () => owned.delete(proc));
  if (!hooked) {
    hooked = true;
    process.once("exit", () => {
      for (const child of owned) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
  }
  return proc;
}
