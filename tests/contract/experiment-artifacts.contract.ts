import { describe, expect, it } from "vitest";
import { ValidationError } from "@harness-s/core";
import { ARTIFACT_TYPES, MAX_ARTIFACT_BYTES, type ExperimentArtifacts } from "@harness-s/core/experiment";

const text = (s: string) => new TextEncoder().encode(s);
/** The PNG signature and a few bytes past it, every byte value among them. */
const png = () =>
  new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Array.from({ length: 256 }, (_, i) => i)]);

/** What every ExperimentArtifacts adapter must do; `fresh` returns an empty store. */
export function experimentArtifactsContract(name: string, fresh: () => Promise<ExperimentArtifacts>): void {
  describe(`ExperimentArtifacts contract: ${name}`, () => {
    it("keeps each run's files apart, bytes and type as written; a rewrite replaces; list is sorted and per run", async () => {
      const s = await fresh();
      await s.put("exp_a", "report.md", text("# one"), ARTIFACT_TYPES.md);
      await s.put("exp_a", "utilities.png", png(), ARTIFACT_TYPES.png);
      await s.put("exp_a", "curves.png", png(), ARTIFACT_TYPES.png);
      await s.put("exp_b", "report.md", text("# other run"), ARTIFACT_TYPES.md);
      await s.put("exp_a", "report.md", text("# two ✓"), ARTIFACT_TYPES.md);
      expect(await s.get("exp_a", "report.md")).toEqual({
        name: "report.md",
        contentType: ARTIFACT_TYPES.md,
        bytes: text("# two ✓"),
      });
      expect(await s.get("exp_a", "curves.png")).toEqual({
        name: "curves.png",
        contentType: ARTIFACT_TYPES.png,
        bytes: png(),
      });
      expect(new TextDecoder().decode((await s.get("exp_b", "report.md"))!.bytes)).toBe("# other run");
      expect(await s.list("exp_a")).toEqual(["curves.png", "report.md", "utilities.png"]);
      expect(await s.list("exp_b")).toEqual(["report.md"]);
      // A run whose id is another's prefix shares nothing with it.
      expect(await s.list("exp_")).toEqual([]);
    });

    it("answers undefined and an empty list for what was never written", async () => {
      const s = await fresh();
      expect(await s.get("exp_none", "report.md")).toBeUndefined();
      expect(await s.list("exp_none")).toEqual([]);
      await s.put("exp_c", "report.md", text("x"), ARTIFACT_TYPES.md);
      expect(await s.get("exp_c", "curves.png")).toBeUndefined();
    });

    it("refuses ids and names that could leave the run's folder, other extensions, a type that is not the name's, and oversized files, writing nothing", async () => {
      const s = await fresh();
      const badNames = [
        "../report.md",
        "a/b.png",
        "..",
        ".hidden.md",
        "report.MD",
        "report.txt",
        "report",
        "",
        "%2e%2e.md",
        `${"x".repeat(70)}.md`,
      ];
      for (const n of badNames) {
        await expect(s.put("exp_d", n, text("x"), ARTIFACT_TYPES.md), n).rejects.toBeInstanceOf(ValidationError);
        await expect(s.get("exp_d", n), n).rejects.toBeInstanceOf(ValidationError);
      }
      for (const id of ["..", "../exp_d", "exp/d", "", ".exp", "exp d", "exp_d/.."]) {
        await expect(s.put(id, "report.md", text("x"), ARTIFACT_TYPES.md), id).rejects.toBeInstanceOf(ValidationError);
        await expect(s.get(id, "report.md"), id).rejects.toBeInstanceOf(ValidationError);
        await expect(s.list(id), id).rejects.toBeInstanceOf(ValidationError);
      }
      await expect(s.put("exp_d", "curves.png", text("x"), ARTIFACT_TYPES.md)).rejects.toBeInstanceOf(ValidationError);
      await expect(
        s.put("exp_d", "report.md", new Uint8Array(MAX_ARTIFACT_BYTES + 1), ARTIFACT_TYPES.md),
      ).rejects.toBeInstanceOf(ValidationError);
      expect(await s.list("exp_d")).toEqual([]);
    });

    it("a read is a copy: changing what was read or written does not change what is stored", async () => {
      const s = await fresh();
      const written = text("abc");
      await s.put("exp_e", "report.md", written, ARTIFACT_TYPES.md);
      written[0] = 0x7a;
      const read = (await s.get("exp_e", "report.md"))!;
      read.bytes[1] = 0x7a;
      expect((await s.get("exp_e", "report.md"))!.bytes).toEqual(text("abc"));
    });
  });
}
