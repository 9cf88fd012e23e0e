import { runCli } from "./program.ts";

// The harness-s executable: every usage error exits 2 (see `runCli`).
const code = await runCli(process.argv);
if (code !== 0) process.exit(code);
