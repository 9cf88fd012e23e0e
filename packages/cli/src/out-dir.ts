import { mkdir, stat, unlink, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { UsageError } from "./flags.ts";

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException)?.code ?? String(err);

/**
 * Makes an output folder (and its missing parents, one at a time: Node's recursive mkdir spins
 * forever under /proc) and writes a file in it, before any work: a folder the command cannot
 * write in is a UsageError naming the flag and why, never a stack trace or a run whose results
 * have nowhere to go.
 *
 * @example
 * await prepareOutDir(opts.out); // UsageError "--out /etc/passwd/x: /etc/passwd is a file, not a folder"
 */
export async function prepareOutDir(dir: string, flag = "--out"): Promise<void> {
  const target = resolve(dir);
  const missing: string[] = [];
  let existing = target;
  for (;;) {
    const found = await stat(existing).catch((err) =>
      codeOf(err) === "ENOENT"
        ? undefined
        : Promise.reject(new UsageError(`${flag} ${dir}: cannot read ${existing} (${codeOf(err)})`)),
    );
    if (found) {
      if (!found.isDirectory()) throw new UsageError(`${flag} ${dir}: ${existing} is a file, not a folder`);
      break;
    }
    missing.unshift(existing);
    if (dirname(existing) === existing) break;
    existing = dirname(existing);
  }
  for (const part of missing)
    await mkdir(part).catch((err) =>
      codeOf(err) === "EEXIST"
        ? undefined
        : Promise.reject(new UsageError(`${flag} ${dir}: cannot create ${part} (${codeOf(err)})`)),
    );
  const probe = join(target, `.harness-s-write-check-${process.pid}`);
  try {
    await writeFile(probe, "");
    await unlink(probe);
  } catch (err) {
    throw new UsageError(`${flag} ${dir}: cannot write files there (${codeOf(err)})`);
  }
}
