import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ValidationError, parseOrThrow } from "@harness-s/core";
import { parseSeedList } from "./seeds.ts";

/** A block of fresh seeds, declared (committed) before it is run, and run once. */
export const ConfirmationBlock = z.strictObject({
  id: z.string().regex(/^C[0-9]+$/, "block ids are C1, C2, …"),
  seeds: z.string().min(1),
  declared: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  purpose: z.string().min(1),
  /** Extra `harness-s experiment` flags the block runs with (none: the default experiment). */
  experiment: z.array(z.string()).default([]),
});
export type ConfirmationBlock = z.infer<typeof ConfirmationBlock>;

export const ConfirmationFile = z.strictObject({
  rule: z.string().min(1),
  /** Seeds that informed a decision: never part of a block. */
  developmentSeeds: z.array(z.string()).min(1),
  blocks: z.array(ConfirmationBlock),
});
export type ConfirmationFile = z.infer<typeof ConfirmationFile>;

export const BLOCKS_FILE = "confirmation/blocks.json";

/**
 * Parses the declaration file and checks it is coherent: ids unique, no block shares a seed with
 * another block or with the development seeds.
 *
 * @example
 * const file = parseConfirmationFile(JSON.parse(text));
 */
export function parseConfirmationFile(json: unknown): ConfirmationFile {
  const file = parseOrThrow(ConfirmationFile, json, BLOCKS_FILE);
  const owner = new Map<number, string>();
  const claim = (seeds: number[], who: string) => {
    for (const s of seeds) {
      const earlier = owner.get(s);
      if (earlier) throw new ValidationError(BLOCKS_FILE, [`seed ${s} is in ${earlier} and in ${who}`]);
      owner.set(s, who);
    }
  };
  claim(
    file.developmentSeeds.flatMap((s) => parseSeedList(s)),
    "the development seeds",
  );
  for (const b of file.blocks) {
    if (file.blocks.filter((x) => x.id === b.id).length > 1)
      throw new ValidationError(BLOCKS_FILE, [`block ${b.id} is declared twice`]);
    claim(parseSeedList(b.seeds), `block ${b.id}`);
  }
  return file;
}

function git(root: string, args: string[]): string {
  try {
    return execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (err) {
    throw new ValidationError("confirm", [
      `git ${args.join(" ")} failed: ${(err as Error).message.split("\n")[0]} (a block can only be run from a git checkout, where its declaration is a commit)`,
    ]);
  }
}

export interface DeclaredBlock {
  block: ConfirmationBlock;
  seeds: number[];
  /** The first commit whose blocks file holds this block, as declared. */
  declarationCommit: string;
  /** The commit the run's code is at. */
  codeCommit: string;
  outDir: string;
}

/**
 * Everything that must hold before a block may run: declared in the committed blocks file (the
 * working copy of that file equal to HEAD's), never run before (no results folder), and the
 * code committed (a run from a dirty tree could not be reproduced).
 */
export async function declaredBlock(root: string, id: string): Promise<DeclaredBlock> {
  const path = join(root, BLOCKS_FILE);
  const working = parseConfirmationFile(JSON.parse(await readFile(path, "utf8")));
  const block = working.blocks.find((b) => b.id === id);
  if (!block)
    throw new ValidationError("confirm", [
      `no block ${id} in ${BLOCKS_FILE} (declared: ${working.blocks.map((b) => b.id).join(", ") || "none"})`,
    ]);
  const committed = parseConfirmationFile(JSON.parse(git(root, ["show", `HEAD:${BLOCKS_FILE}`])));
  const atHead = committed.blocks.find((b) => b.id === id);
  if (!atHead || JSON.stringify(atHead) !== JSON.stringify(block)) {
    throw new ValidationError("confirm", [
      `block ${id} differs from (or is missing in) the committed ${BLOCKS_FILE}: commit the declaration before running it`,
    ]);
  }
  const dirty = git(root, ["status", "--porcelain", "--untracked-files=no"]);
  if (dirty)
    throw new ValidationError("confirm", [
      `uncommitted changes to tracked files:\n${dirty}\ncommit them first, so the run's code is a commit`,
    ]);
  const outDir = join(root, "confirmation", id);
  if (existsSync(join(outDir, "summary.json"))) {
    throw new ValidationError("confirm", [
      `block ${id} has been run (${join("confirmation", id, "summary.json")} exists): each block is used once; declare a new one`,
    ]);
  }
  const history = git(root, ["log", "--format=%H", "--reverse", "--", BLOCKS_FILE]).split("\n").filter(Boolean);
  const declarationCommit = history.find((c) => {
    const file = JSON.parse(git(root, ["show", `${c}:${BLOCKS_FILE}`])) as { blocks?: { id?: string }[] };
    return file.blocks?.some((b) => b.id === id);
  });
  return {
    block,
    seeds: parseSeedList(block.seeds),
    declarationCommit: declarationCommit!,
    codeCommit: git(root, ["rev-parse", "HEAD"]),
    outDir,
  };
}

/** Splits seeds into `parts` contiguous, near-equal runs (for parallel processes). */
export function splitSeeds(seeds: readonly number[], parts: number): number[][] {
  const n = Math.max(1, Math.min(parts, seeds.length));
  const size = Math.ceil(seeds.length / n);
  return Array.from({ length: n }, (_, i) => seeds.slice(i * size, (i + 1) * size)).filter((p) => p.length > 0);
}

export interface Attempt {
  codeCommit: string;
  startedAt: string;
  processes: number;
}

/**
 * What a block's figures cannot depend on: its own parts and results, the prose about them, and the tests and CI that
 * `experiment` never runs.
 */
const NOT_CODE = ["confirmation/**", "docs/**", "**/*.md", "tests/**", ".ci/**"];

/**
 * Appends this attempt to `attempts.json`, refusing to continue a block on other code than its
 * first attempt ran (a commit that only adds the block's own parts and figures, or changes
 * documentation, tests or CI, is the same code).
 */
export async function recordAttempt(
  root: string,
  outDir: string,
  codeCommit: string,
  started: Date,
  processes: number,
): Promise<Attempt[]> {
  const file = join(outDir, "attempts.json");
  const earlier: Attempt[] = existsSync(file) ? JSON.parse(await readFile(file, "utf8")) : [];
  const first = earlier[0];
  if (first && first.codeCommit !== codeCommit) {
    const changed = execFileSync(
      "git",
      ["diff", "--name-only", first.codeCommit, codeCommit, "--", ".", ...NOT_CODE.map((p) => `:(exclude,glob)${p}`)],
      {
        cwd: root,
        encoding: "utf8",
      },
    ).trim();
    if (changed)
      throw new ValidationError("confirm", [
        `this block started on ${first.codeCommit.slice(0, 10)}; the code has changed since (${changed.split("\n").slice(0, 5).join(", ")}): continue it on that code, or declare a new block`,
      ]);
  }
  const attempts = [...earlier, { codeCommit, startedAt: started.toISOString(), processes }];
  await writeFile(file, `${JSON.stringify(attempts, null, 2)}\n`);
  return attempts;
}
