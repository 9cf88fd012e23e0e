/** Where the shared policy worker's pid is written for the CPU meter (tests/cpu-meter.ts) to read. */
export const SHARED_WORKER_PID = ".harness-s/shared-worker.pid";
