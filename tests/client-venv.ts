import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = fileURLToPath(new URL("../", import.meta.url));

/** The client's own venv (scripts/client-venv.sh: made if missing or stale): its python. */
export async function clientVenv(): Promise<string> {
  const { stdout } = await promisify(execFile)("bash", ["scripts/client-venv.sh"], { cwd: root, timeout: 300_000 });
  return `${root}${stdout.trim().split("\n").at(-1)}`;
}
