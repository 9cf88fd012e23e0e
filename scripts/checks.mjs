// The static checks `npm test` runs before the tests, run side by side (on a fresh clone the
// worker's venv and SST's platform are installed here, and they wait on the disk more than the
// cores). Each check's output is printed when it ends; the script fails if any check failed.
//
//   node scripts/checks.mjs            every check
//   node scripts/checks.mjs lint ...   the named ones (npm script names)
import { spawn } from "node:child_process";

const killGroup = (pid, signal) => {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group has already ended
  }
};

const ALL = ["lint", "check:lengths", "check:cycles", "check:imports", "typecheck", "typecheck:infra", "lint:worker"];
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : ALL;
const unknown = wanted.filter((c) => !ALL.includes(c));
if (unknown.length) {
  console.error(`unknown check ${unknown.join(", ")} (known: ${ALL.join(", ")})`);
  process.exit(2);
}

const started = performance.now();
const children = new Set();
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(signal, () => {
    for (const child of children) killGroup(child.pid, signal);
    process.exit(1);
  });
const run = (name) =>
  new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn("npm", ["run", "-s", name], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    children.add(child);
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("close", (code) => {
      children.delete(child);
      const seconds = ((performance.now() - t0) / 1000).toFixed(1);
      process.stdout.write(`${code === 0 ? "ok  " : "FAIL"} ${name} (${seconds} s)\n`);
      if (code !== 0 && output.trim()) process.stdout.write(`${output.trimEnd()}\n`);
      resolve(code === 0);
    });
  });

const results = await Promise.all(wanted.map(run));
console.log(
  `checks: ${results.filter(Boolean).length} of ${results.length} passed in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
process.exit(results.every(Boolean) ? 0 : 1);
