import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { ARTIFACT_TYPES } from "@harness-s/core/experiment";
import { FolderExperimentArtifacts, MemoryExperimentArtifacts } from "@harness-s/adapters/stores";
import { experimentArtifactsContract } from "../contract/experiment-artifacts.contract.ts";

const roots: string[] = [];
const freshRoot = () => {
  const root = mkdtempSync(join(tmpdir(), "hs-artifacts-"));
  roots.push(root);
  return root;
};
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

experimentArtifactsContract("in-memory", async () => new MemoryExperimentArtifacts());
experimentArtifactsContract("folder", async () => new FolderExperimentArtifacts(join(freshRoot(), "artifacts")));

it("the folder adapter writes each run's files in its own folder under the root, and nothing else", async () => {
  const root = freshRoot();
  const store = new FolderExperimentArtifacts(root);
  await store.put("exp_1", "report.md", new TextEncoder().encode("# r"), ARTIFACT_TYPES.md);
  await store.put("exp_1", "curves.png", new Uint8Array([0x89, 0x50]), ARTIFACT_TYPES.png);
  expect(readdirSync(root)).toEqual(["exp_1"]);
  expect(readdirSync(join(root, "exp_1")).sort()).toEqual(["curves.png", "report.md"]);
});
