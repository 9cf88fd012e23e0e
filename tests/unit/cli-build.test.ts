import { statSync, utimesSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error: the CLI's builder is plain JavaScript (packages/cli/bin), untyped
import { builtEntry, currentCliBuild } from "../../packages/cli/bin/build.mjs";

// A thread or process started from source runs the build's copy of its body only while the build is as new as every
// source file it was made from: a file edited after the build sends it back to the source (through tsx's loader).
describe("the CLI's build, as a source entry finds it", () => {
  it("is used while current and not once a source it holds is newer", async () => {
    const dir: string = await currentCliBuild();
    expect(builtEntry("fauxqs-thread")).toBe(`file://${dir}/fauxqs-thread.mjs`);
    const source = "functions/local/fair-queues.ts";
    const { atime, mtime } = statSync(source);
    try {
      utimesSync(source, atime, new Date(Date.now() + 60_000));
      expect(builtEntry("fauxqs-thread")).toBeUndefined();
    } finally {
      utimesSync(source, atime, mtime);
    }
    expect(builtEntry("fauxqs-thread")).toBe(`file://${dir}/fauxqs-thread.mjs`);
  });
});
