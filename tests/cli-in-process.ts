import { runCli } from "../packages/cli/src/program.ts";

/**
 * The CLI run in this process (usage errors and help never start work, so a process per case would only add start-up
 * time): `code` is what the executable would exit with, `stdout` and `stderr` what it wrote.
 */
export async function cliInProcess(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(["node", "harness-s", ...args], {
    writeOut: (t) => (stdout += t),
    writeErr: (t) => (stderr += t),
  });
  return { code, stdout, stderr };
}
