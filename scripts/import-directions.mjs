// The import-direction check (`npm run check:imports`, one of npm test's static checks): arrows
// that must not exist between the rooms. The code that runs (functions/, every package's src/)
// never imports the stacks that deploy it: a setting both read lives in infra/, which imports
// nothing. Exit 1 on any such import (static, dynamic or `export ... from`).
import { execSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path/posix";
import ts from "typescript";

/** Files matching `from` may not import a specifier matching `forbid` (relative ones as repo paths). */
const RULES = [
  {
    from: /^(functions|packages\/[^/]+\/src)\//,
    forbid: /^(stacks\/|sst\.config)/,
    why: "runtime code imports infra/settings.ts, never the stacks",
  },
  {
    from: /^infra\//,
    forbid: /./,
    why: "infra/ is dependency-free (the Lambda bundles, the SST config and the tests import it as it is)",
  },
];

const files = execSync("git ls-files --cached --others --exclude-standard '*.ts' '*.mts' '*.mjs'", { encoding: "utf8" })
  .split("\n")
  .filter((f) => f && existsSync(f));
const wrong = [];
for (const file of files) {
  const rules = RULES.filter((r) => r.from.test(file));
  if (!rules.length) continue;
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  for (const { fileName } of importedFiles) {
    const target = fileName.startsWith(".") ? normalize(join(dirname(file), fileName)) : fileName;
    for (const rule of rules) if (rule.forbid.test(target)) wrong.push(`${file} imports ${fileName}: ${rule.why}`);
  }
}
/**
 * Calls with one home: the function may be called from that file only (in the code that runs; the
 * tests call it freely), so the concern it carries has one place.
 */
const CALL_HOMES = [
  {
    name: "runEpisode",
    home: "packages/core/src/rollout/episode-runner.ts",
    why: "an episode is run by core's episodeRunner (rolloutsIn) only: ports hand back a policy and an environment",
  },
  {
    name: "visibleTo",
    home: ["packages/core/src/access/keys.ts", "packages/core/src/pools/visibility.ts"],
    why: "owned by this key, else 404, is decided by ownedBy (a store as the key sees it), and by the pools' view",
  },
  {
    name: "addUsage",
    home: "functions/api/middleware/metering.ts",
    why: "a request's usage is what its use-case reports to its sink (usageOf): no handler computes usage",
  },
];
for (const file of files.filter((f) => /^(functions|packages\/[^/]+\/src)\//.test(f))) {
  const lines = readFileSync(file, "utf8").split("\n");
  for (const { name, home, why } of CALL_HOMES) {
    if ([home].flat().includes(file)) continue;
    lines.forEach((line, i) => {
      const call = new RegExp(`(?<!function )\\b${name}\\(`);
      if (!/^\s*(\*|\/\/)/.test(line) && call.test(line)) wrong.push(`${file}:${i + 1} calls ${name}: ${why}`);
    });
  }
}
for (const w of wrong) console.log(w);
console.log(
  wrong.length
    ? `imports: ${wrong.length} against the direction or outside a call's home`
    : `imports: none against the direction in ${RULES.length} rules; ${CALL_HOMES.length} calls in their homes`,
);
process.exit(wrong.length ? 1 : 0);
