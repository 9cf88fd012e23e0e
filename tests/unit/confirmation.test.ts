import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  BLOCKS_FILE,
  declaredBlock,
  parseConfirmationFile,
  recordAttempt,
  splitSeeds,
} from "../../packages/cli/src/confirmation.ts";
import { suiteLmBuildArgs } from "../../packages/cli/src/commands/confirm.ts";

const block = (id: string, seeds: string) => ({ id, seeds, declared: "2026-12-01", purpose: "test", experiment: [] });
const file = (blocks: unknown[], developmentSeeds = ["1-25"]) => ({ rule: "once", developmentSeeds, blocks });

/** A git repository with a blocks file; `commit` decides whether the declaration is committed. */
function repoWith(blocks: unknown[], commit: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "hs-confirm-"));
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, stdio: "ignore" });
  git("init", "-q");
  git("config", "user.email", "t@example.com");
  git("config", "user.name", "t");
  mkdirSync(join(root, "confirmation"));
  writeFileSync(join(root, BLOCKS_FILE), JSON.stringify(file([])));
  git("add", "-A");
  git("commit", "-qm", "empty declaration");
  writeFileSync(join(root, BLOCKS_FILE), JSON.stringify(file(blocks)));
  if (commit) {
    git("add", "-A");
    git("commit", "-qm", "declare");
  }
  return root;
}

describe("confirmation blocks", () => {
  it("refuse a block that shares a seed with the development seeds or another block, or a repeated id", () => {
    expect(() => parseConfirmationFile(file([block("C1", "20-40")]))).toThrow(
      /seed 20 is in the development seeds and in block C1/,
    );
    expect(() => parseConfirmationFile(file([block("C1", "100-110"), block("C2", "110-120")]))).toThrow(
      /seed 110 is in block C1 and in block C2/,
    );
    expect(() => parseConfirmationFile(file([block("C1", "100-101"), block("C1", "200-201")]))).toThrow(
      /declared twice/,
    );
    expect(parseConfirmationFile(file([block("C1", "100-139")])).blocks[0]!.seeds).toBe("100-139");
  });

  it("run only when declared in a commit, on a clean tree, and once", async () => {
    // Prepare / Act / Assess: an uncommitted declaration is refused
    const uncommitted = repoWith([block("C1", "100-139")], false);
    await expect(declaredBlock(uncommitted, "C1")).rejects.toThrow(/commit the declaration before running it/);
    // a committed one is accepted, naming the commit that declared it
    const root = repoWith([block("C1", "100-139")], true);
    const ok = await declaredBlock(root, "C1");
    const declaring = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    expect(ok.declarationCommit).toBe(declaring);
    expect(ok.seeds).toHaveLength(40);
    await expect(declaredBlock(root, "C9")).rejects.toThrow(/no block C9/);
    // a dirty tracked file is refused
    writeFileSync(join(root, "confirmation", "blocks.json"), `${JSON.stringify(file([block("C1", "100-139")]))}\n`);
    await expect(declaredBlock(root, "C1")).rejects.toThrow(/uncommitted changes/);
    execFileSync("git", ["checkout", "--", "."], { cwd: root });
    // a block with results has been used
    mkdirSync(join(root, "confirmation", "C1"));
    writeFileSync(join(root, "confirmation", "C1", "summary.json"), "{}");
    await expect(declaredBlock(root, "C1")).rejects.toThrow(/each block is used once/);
  });

  it("split a block into contiguous parts that cover it once", () => {
    expect(splitSeeds([1, 2, 3, 4, 5], 2)).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(splitSeeds([1], 4)).toEqual([[1]]);
  });
});

describe("a confirmation block over several attempts", () => {
  it("continues on the code it started on (a commit of its own parts, prose or tests is the same code) and refuses other code", async () => {
    // Prepare
    const root = repoWith([block("C1", "100-139")], true);
    const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
    const out = join(root, "confirmation", "C1");
    mkdirSync(out, { recursive: true });
    const first = git("rev-parse", "HEAD");
    // Act: a first attempt, then its parts committed, then a second attempt
    await recordAttempt(root, out, first, new Date("2026-12-01T00:00:00Z"), 1);
    mkdirSync(join(out, "parts"));
    writeFileSync(join(out, "parts", "checkpoint.json"), "{}");
    git("add", "-A");
    git("commit", "-qm", "C1: parts so far");
    const attempts = await recordAttempt(root, out, git("rev-parse", "HEAD"), new Date("2026-12-02T00:00:00Z"), 1);
    // Assess
    expect(attempts.map((a) => a.codeCommit)).toEqual([first, git("rev-parse", "HEAD")]);
    mkdirSync(join(root, "docs"));
    writeFileSync(join(root, "docs", "notes.md"), "the block so far\n");
    writeFileSync(join(root, "README.md"), "# figures to come\n");
    mkdirSync(join(root, "tests"));
    writeFileSync(join(root, "tests", "a.test.ts"), "export {};\n");
    git("add", "-A");
    git("commit", "-qm", "prose and tests only");
    expect(await recordAttempt(root, out, git("rev-parse", "HEAD"), new Date(), 1)).toHaveLength(3);
    writeFileSync(join(root, "code.ts"), "export {};\n");
    git("add", "-A");
    git("commit", "-qm", "a code change");
    await expect(recordAttempt(root, out, git("rev-parse", "HEAD"), new Date(), 1)).rejects.toThrow(
      /the code has changed since \(code\.ts\)/,
    );
  });
});

describe("a token-level block", () => {
  it("builds its suite LM once, where its parts will look for it, before they start", () => {
    expect(
      suiteLmBuildArgs([
        "--policy",
        "worker",
        "--policy-model",
        "suite-lm",
        "--model-cache",
        "confirmation/C3/model",
        "--suite-lm-size=base",
      ]),
    ).toEqual(["suite-lm", "build", "--size", "base", "--cache-dir", "confirmation/C3/model"]);
    expect(suiteLmBuildArgs(["--policy", "worker", "--policy-model=suite-lm"])).toEqual([
      "suite-lm",
      "build",
      "--size",
      "small",
    ]);
    expect(
      suiteLmBuildArgs(["--policy", "worker", "--policy-model", "suite-lm", "--policy-url", "http://127.0.0.1:8765"]),
    ).toBeUndefined();
    expect(suiteLmBuildArgs(["--sweep", "router"])).toBeUndefined();
  });
});
