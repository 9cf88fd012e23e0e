// Makes `.sst/platform` (SST's component types) available without AWS or internet beyond npm:
// runs `sst install` with the offline flags when it is missing. Used by `npm run typecheck:infra`
// and the infrastructure test, either of which may run first or both at once: one installs under
// an flock(1) lock (released if it dies), the other waits and finds the platform there.
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

const PLATFORM = ".sst/platform/config.d.ts";
const LOCK = ".sst-install.lock";

if (!existsSync(PLATFORM)) {
  const r = process.argv.includes("--locked")
    ? install()
    : spawnSync("flock", [LOCK, process.execPath, ...process.argv.slice(1), "--locked"], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function install() {
  if (existsSync(PLATFORM)) return { status: 0 };
  console.log("sst install (offline flags) — about a minute on a fresh clone");
  return spawnSync("npx", ["sst", "install", "--stage", "ci"], {
    stdio: "inherit",
    env: { ...process.env, SST_SKIP_DEPENDENCY_CHECK: "1", SST_NO_BUN: "1", SST_TELEMETRY_DISABLED: "1" },
  });
}
