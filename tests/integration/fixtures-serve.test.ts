import { execFile, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { FIXTURES_DIR } from "@harness-s/envs";

const sh = promisify(execFile);

describe("the local protocol servers", () => {
  it("refuse to start without bubblewrap unless told they run trusted fixtures only", async () => {
    const python = (await sh("python3", ["-c", "import sys; print(sys.executable)"])).stdout.trim();
    const server = `${FIXTURES_DIR}/appworld/server.py`;
    const refused = await sh(python, [server], { env: { PATH: "/nonexistent" } }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((refused as { code: number }).code).toBe(2);
    expect((refused as { stderr: string }).stderr).toMatch(
      /confines it with bubblewrap, which is missing .* --trusted-fixtures-only/,
    );
    const trusted = spawn(python, [server, "--trusted-fixtures-only"], {
      env: { PATH: "/nonexistent" },
      stdio: ["ignore", "pipe", "ignore"],
    });
    const line = await new Promise<string>((r) => createInterface({ input: trusted.stdout! }).once("line", r));
    trusted.kill("SIGTERM");
    expect(JSON.parse(line)).toMatchObject({ sandbox: "none" });
  }, 30_000);

  it("fixtures-serve prints where they listen and stops every one of them on SIGTERM", async () => {
    const cli = spawn(
      "node",
      ["packages/cli/bin/harness-s.js", "fixtures-serve", "--appworld-servers", "2", "--no-swe"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const line = await new Promise<string>((r) => createInterface({ input: cli.stdout! }).once("line", r));
    const { appworld, sandbox } = JSON.parse(line) as { appworld: string[]; sandbox: string };
    expect(appworld).toHaveLength(2);
    expect(sandbox).toBe("bwrap");
    for (const url of appworld) expect((await fetch(`${url}/stats`)).status).toBe(200);
    cli.kill("SIGTERM");
    await new Promise((r) => cli.once("exit", r));
    for (const url of appworld) await expect(fetch(`${url}/stats`)).rejects.toThrow();
  }, 60_000);
});
