// Makes `.sst/platform` (SST's component types) available without AWS or internet beyond npm:
// runs `sst install` with the offline flags when it is missing. Used by `npm run typecheck:infra`.
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

if (!existsSync(".sst/platform/config.d.ts")) {
  console.log("sst install (offline flags) — about a minute on a fresh clone");
  const r = spawnSync("npx", ["sst", "install", "--stage", "ci"], {
    stdio: "inherit",
    env: { ...process.env, SST_SKIP_DEPENDENCY_CHECK: "1", SST_NO_BUN: "1", SST_TELEMETRY_DISABLED: "1" },
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
