import { runCli } from "./program.ts";

// A signal nothing else handles ends the process through process.exit, so that its exit hooks run
// (every child it started is killed: see ownChild); a command that handles one itself (serve's
// graceful stop) is left to do so.
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const)
  process.on(signal, () => {
    if (process.listenerCount(signal) === 1) process.exit(code);
  });

// The harness-s executable: every usage error exits 2 (see `runCli`).
const code = await runCli(process.argv);
if (code !== 0) process.exit(code);
