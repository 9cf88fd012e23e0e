import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureWorkerVenv } from "../packages/cli/src/policy-worker.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A process's CPU seconds with those of the children it waited for (the zygote's forked runs). */
function cpuWithChildren(pid: number): number | undefined {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return undefined;
  }
}

// One zygote for the run (packages/policy-worker/harness_s_worker/zygote.py): the workers, suite-LM builds and other
// `python -m` runs the files start through `workerPython` fork from its imports, done once, instead of importing torch,
// transformers and peft again (about 5 CPU seconds a process). Started in the background: a run asked for before it
// listens starts the venv's python as before. The forked runs are its children, not the files': their CPU is shown
// here when the run ends, not in the files' counts.
export default async function setup() {
  if (process.env.HARNESS_S_NO_ZYGOTE) return;
  const python = await ensureWorkerVenv();
  const dir = mkdtempSync(join(tmpdir(), "hs-zygote-"));
  const socket = join(dir, "zygote.sock");
  const zygote = spawn(python, ["-m", "harness_s_worker.zygote", "--socket", socket], {
    cwd: join(ROOT, "packages/policy-worker"),
    stdio: ["ignore", "ignore", "inherit"],
    // As workerPython's callers start their runs: the zygote refuses a run whose import-read variables differ from its.
    env: { ...process.env, TOKENIZERS_PARALLELISM: "false" },
  });
  zygote.on("error", () => undefined);
  process.env.HARNESS_S_PYTHON_ZYGOTE = socket;
  return async () => {
    delete process.env.HARNESS_S_PYTHON_ZYGOTE;
    const cpu = zygote.pid ? cpuWithChildren(zygote.pid) : undefined;
    if (cpu !== undefined) console.log(`the Python zygote and the runs forked from it: ${cpu.toFixed(1)} CPU s`);
    const exited = new Promise((r) => zygote.once("exit", r));
    zygote.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    rmSync(dir, { recursive: true, force: true });
  };
}
