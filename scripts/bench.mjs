// `npm run bench`: the CLI's bench (`harness-s bench`, its flags passed on: `npm run bench -- --worker`), then the
// benchmark tests (tests/bench/: quotes against metered runs, the rescue bench's report), which `npm test` does not
// run. `npm run bench -- --tests-only` runs only the tests, `--cli-only` only the CLI's bench. Each runs to its end
// and the first failure's status is the script's; every child runs in the foreground and ends with it.
import { spawnSync } from "node:child_process";

const args = process.argv.slice(2);
const only = (flag) => args.includes(flag);
const cliArgs = args.filter((a) => a !== "--tests-only" && a !== "--cli-only");
const steps = [
  ...(only("--tests-only") ? [] : [["node", ["--import", "tsx", "packages/cli/src/main.ts", "bench", ...cliArgs]]]),
  ...(only("--cli-only") ? [] : [["npx", ["vitest", "run", "--project", "bench"]]]),
];
let status = 0;
for (const [cmd, argv] of steps) {
  console.log(`\n$ ${cmd} ${argv.join(" ")}`);
  const run = spawnSync(cmd, argv, { stdio: "inherit" });
  if (run.error) throw run.error;
  if (status === 0 && run.status !== 0) status = run.status ?? 1;
}
process.exit(status);
