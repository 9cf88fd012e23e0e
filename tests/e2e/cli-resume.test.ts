import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it, vi } from "vitest";
import { Checkpoint } from "../../packages/cli/src/checkpoint.ts";
import { cliInProcess } from "../cli-in-process.ts";

const run = promisify(execFile);
const cli = ["packages/cli/bin/harness-s.js"];
const quick = ["experiment", "--quick", "--seeds", "1,2"];
const summaryOf = async (dir: string) => JSON.parse(await readFile(join(dir, "summary.json"), "utf8"));
const checkpointOf = async (dir: string) =>
  Checkpoint.parse(JSON.parse(await readFile(join(dir, "checkpoint.json"), "utf8")));

describe("harness-s experiment --resume", () => {
  it("a run killed part-way continues from its checkpoint and ends with the uninterrupted run's summary", async () => {
    // Prepare: an uninterrupted reference run, and a run killed once it has finished some units
    const reference = await mkdtemp(join(tmpdir(), "hs-ref-"));
    await run("node", [...cli, ...quick, "--out", reference], { timeout: 120_000 });
    const out = await mkdtemp(join(tmpdir(), "hs-killed-"));
    const child = spawn("node", [...cli, ...quick, "--out", out], { stdio: "ignore" });
    await vi.waitUntil(async () => ((await checkpointOf(out).catch(() => undefined))?.results.length ?? 0) >= 2, {
      timeout: 120_000,
      interval: 100,
    });
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const finishedBefore = (await checkpointOf(out)).results.length;
    expect(finishedBefore).toBeLessThan(12);
    // Act
    const { stderr } = await run("node", [...cli, ...quick, "--out", out, "--resume"], { timeout: 120_000 });
    // Assess
    expect(stderr).toContain(`resuming: ${finishedBefore} (arm, seed) units already finished`);
    expect(await summaryOf(out)).toEqual(await summaryOf(reference));
    expect((await checkpointOf(out)).results).toHaveLength(12);
  }, 300_000);

  // Each is refused before any work starts (a usage error, exit 2): in this process, as cli.test.ts runs usage errors.
  it("refuses to overwrite a checkpoint, to resume another configuration, or a damaged checkpoint", async () => {
    const out = await mkdtemp(join(tmpdir(), "hs-cp-"));
    await writeFile(
      join(out, "checkpoint.json"),
      JSON.stringify({ v: 1, run: { config: { seeds: [9] } }, baselines: [], results: [] }),
    );
    expect(await cliInProcess([...quick, "--out", out])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/holds an earlier run's checkpoint: pass --resume/),
    });
    expect(await cliInProcess([...quick, "--out", out, "--resume"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/written for another config/),
    });
    await writeFile(join(out, "checkpoint.json"), "{not json");
    expect(await cliInProcess([...quick, "--out", out, "--resume"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/not JSON/),
    });
    expect(await cliInProcess([...quick, "--resume"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--resume needs --out/),
    });
  });
});
