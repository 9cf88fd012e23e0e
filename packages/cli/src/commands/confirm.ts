import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { join } from "node:path";
import { ownChild } from "@harness-s/adapters/local";
import { prepareOutDir } from "../out-dir.ts";
import { declaredBlock, recordAttempt, splitSeeds } from "../confirmation.ts";
import { reportCommand } from "./report.ts";

export interface ConfirmOptions {
  /** Repository root (where confirmation/blocks.json lives). */
  root: string;
  block: string;
  /** Experiment processes run at once (each on a contiguous part of the block). */
  jobs: number;
}

function runPart(args: string[], label: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = ownChild(
      spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], {
        stdio: ["ignore", "ignore", "pipe"],
      }),
    );
    let tail = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      tail = (tail + chunk).slice(-4000);
      for (const line of chunk.split(/[\r\n]+/).filter((l) => l.trim())) process.stderr.write(`[${label}] ${line}\n`);
    });
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      code === 0
        ? resolve()
        : reject(
            new Error(
              `${label} ended with ${signal ?? `exit code ${code}`}; its last output:\n${tail}\n(run the same confirm again: finished (arm, seed) units are kept)`,
            ),
          ),
    );
  });
}

/**
 * The one `suite-lm build` a block at token level needs before its parts start (they would race to build it), or none.
 */
export function suiteLmBuildArgs(experiment: readonly string[]): string[] | undefined {
  const flag = (name: string) => {
    const i = experiment.indexOf(name);
    return i >= 0 ? experiment[i + 1] : experiment.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
  };
  if (flag("--policy-model") !== "suite-lm" || flag("--policy-url")) return undefined;
  return [
    "suite-lm",
    "build",
    "--size",
    flag("--suite-lm-size") ?? "small",
    ...(flag("--model-cache") ? ["--cache-dir", flag("--model-cache")!] : []),
  ];
}

/**
 * `harness-s confirm C1`: runs a declared confirmation block once. The block must be in the
 * committed `confirmation/blocks.json`, the tree clean, and the block never run; the figures and
 * a provenance record (declaration commit, code commit, times) go to `confirmation/C1/`, to be
 * committed as they are. Parts that finished before a crash are resumed, not re-run; a block that
 * spans working sessions commits its parts (`confirmation/C1/parts/`, checkpoints and worker state
 * included) and continues from a fresh clone, but only on the code it started on: every attempt
 * is recorded (`attempts.json`), and one whose code differs from the first attempt's (anything
 * outside `confirmation/`) is refused.
 */
export async function confirmCommand(opts: ConfirmOptions): Promise<void> {
  const declared = await declaredBlock(opts.root, opts.block);
  const started = new Date();
  const parts = splitSeeds(declared.seeds, opts.jobs);
  process.stderr.write(
    `harness-s confirm ${opts.block}: seeds ${declared.block.seeds} (${declared.seeds.length}) in ${parts.length} processes; declared in ${declared.declarationCommit.slice(0, 10)}, code at ${declared.codeCommit.slice(0, 10)}\n`,
  );
  const dirs = parts.map((_, i) => join(declared.outDir, "parts", `part-${i + 1}`));
  await prepareOutDir(declared.outDir, "the block's output folder");
  const attempts = await recordAttempt(opts.root, declared.outDir, declared.codeCommit, started, parts.length);
  const build = suiteLmBuildArgs(declared.block.experiment);
  if (build) await runPart(build, "suite-lm build");
  await Promise.all(
    parts.map((seeds, i) => {
      const resume = existsSync(join(dirs[i]!, "checkpoint.json")) ? ["--resume"] : [];
      return runPart(
        ["experiment", "--seeds", seeds.join(","), "--out", dirs[i]!, ...resume, ...declared.block.experiment],
        `part ${i + 1}`,
      );
    }),
  );
  await reportCommand(dirs, declared.outDir);
  const finished = new Date();
  const provenance = {
    block: declared.block,
    declarationCommit: declared.declarationCommit,
    codeCommit: attempts[0]!.codeCommit,
    attempts,
    startedAt: attempts[0]!.startedAt,
    finishedAt: finished.toISOString(),
    seconds: Math.round((finished.getTime() - new Date(attempts[0]!.startedAt).getTime()) / 1000),
    secondsThisAttempt: Math.round((finished.getTime() - started.getTime()) / 1000),
    processes: parts.length,
    cpus: cpus().length,
    node: process.version,
  };
  await writeFile(join(declared.outDir, "provenance.json"), `${JSON.stringify(provenance, null, 2)}\n`);
  process.stderr.write(
    `confirm ${opts.block}: done in ${provenance.seconds} s → ${declared.outDir} (commit it as it is; the block is now used)\n`,
  );
}
