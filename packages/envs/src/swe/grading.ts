import type { Sandbox, SandboxProvider } from "./sandbox.ts";
import type { SweInstance } from "./protocol.ts";

/** A test's outcome as pytest's `-rA` summary reports it. */
export type TestStatus = "PASSED" | "FAILED" | "ERROR" | "SKIPPED" | "XFAIL" | "XPASS";

/** How long the graded test run may take. */
export const GRADING_SECONDS = 300;

/** Per-test outcomes from pytest's `-rA` short summary (`PASSED tests/a.py::t`, `FAILED tests/a.py::t - …`). */
export function parsePytestSummary(output: string): Map<string, TestStatus> {
  const out = new Map<string, TestStatus>();
  for (const line of output.split("\n")) {
    const m = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)/.exec(line.trim());
    if (m) out.set(m[2]!, m[1] as TestStatus);
  }
  return out;
}

/** The files a unified diff touches (its `+++ b/…` and `--- a/…` paths). */
export function filesOfPatch(patch: string): string[] {
  const files = new Set<string>();
  for (const m of patch.matchAll(/^(?:\+\+\+ b|--- a)\/(\S+)/gm)) files.add(m[1]!);
  return [...files];
}

export interface Grade {
  resolved: boolean;
  /** The model's patch applied on the base commit. */
  applied: boolean;
  failToPass: { passed: string[]; failed: string[] };
  passToPass: { passed: string[]; failed: string[] };
  /** Each named test's status, "MISSING" where pytest did not report it. */
  statuses: Record<string, TestStatus | "MISSING">;
}

const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * SWE-bench's grading in a fresh sandbox: the model's patch on the base commit, the test files
 * the test patch touches put back to the base commit, the test patch applied, then FAIL_TO_PASS
 * and PASS_TO_PASS run by id; resolved only when every one of them passes.
 *
 * @example
 * const grade = await gradePatch(provider, instance, modelPatch); // grade.resolved
 */
export async function gradePatch(provider: SandboxProvider, instance: SweInstance, modelPatch: string): Promise<Grade> {
  const sandbox = await provider.open(instance);
  try {
    return await gradeIn(sandbox, instance, modelPatch);
  } finally {
    await sandbox.close();
  }
}

async function gradeIn(sandbox: Sandbox, instance: SweInstance, modelPatch: string): Promise<Grade> {
  const ids = [...instance.FAIL_TO_PASS, ...instance.PASS_TO_PASS];
  const applied = await sandbox.applyPatch(modelPatch);
  const statuses: Record<string, TestStatus | "MISSING"> = Object.fromEntries(
    ids.map((id) => [id, "MISSING" as const]),
  );
  if (applied) {
    const testFiles = filesOfPatch(instance.test_patch);
    if (testFiles.length)
      await sandbox.run(`git checkout ${instance.base_commit} -- ${testFiles.map(q).join(" ")} 2>/dev/null; true`);
    if (!(await sandbox.applyPatch(instance.test_patch)))
      throw new Error(`the test patch of ${instance.instance_id} does not apply on its base commit`);
    const run = await sandbox.run(`python -m pytest -rA -p no:cacheprovider ${ids.map(q).join(" ")}`, GRADING_SECONDS);
    for (const [id, status] of parsePytestSummary(run.output)) if (id in statuses) statuses[id] = status;
  }
  const split = (list: readonly string[]) => ({
    passed: list.filter((t) => statuses[t] === "PASSED"),
    failed: list.filter((t) => statuses[t] !== "PASSED"),
  });
  const failToPass = split(instance.FAIL_TO_PASS);
  const passToPass = split(instance.PASS_TO_PASS);
  return {
    resolved: applied && failToPass.failed.length === 0 && passToPass.failed.length === 0,
    applied,
    failToPass,
    passToPass,
    statuses,
  };
}
