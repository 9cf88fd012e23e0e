// `npm test`: the static checks (scripts/checks.mjs) and vitest side by side. They share no
// state: the worker's venv and SST's platform, which both may install on a fresh clone, are made
// under a lock by whichever asks first. Extra arguments go to vitest; the exit is non-zero if
// either part failed. Each part runs in its own process group; a signal to this process is passed
// to both groups whole (npm does not pass SIGTERM on to its scripts), so nothing outlives it.
import { spawn } from "node:child_process";

const killGroup = (pid, signal) => {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group has already ended
  }
};

const started = performance.now();
const part = (name, command, args) => {
  const child = spawn(command, args, { stdio: "inherit", detached: true });
  const done = new Promise((resolve) => {
    child.on("error", (err) => {
      console.error(`${name}: ${err.message}`);
      resolve(1);
    });
    child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  return { name, child, done };
};

const parts = [
  part("static checks", process.execPath, ["scripts/checks.mjs"]),
  part("vitest", process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...process.argv.slice(2)]),
];
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(signal, () => {
    for (const p of parts) killGroup(p.child.pid, signal);
  });

const codes = await Promise.all(parts.map((p) => p.done));
const failed = parts.filter((_, i) => codes[i] !== 0).map((p) => p.name);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(failed.length ? `npm test: FAILED (${failed.join(", ")}) in ${seconds} s` : `npm test: static checks and tests passed in ${seconds} s`);
process.exit(failed.length ? 1 : 0);
