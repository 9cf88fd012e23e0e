import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { sharedPolicyWorker } from "../run-policy-worker.ts";

// `experiment --env appworld|swe-gym --policy worker` with the tiny model (random weights: it
// solves nothing, so this checks that every part runs): the local fixture servers started and
// stopped by the command, two arms for one step, the report written.
const run = promisify(execFile);
const cli = ["packages/cli/bin/harness-s.js"];
const args = (env: string, worker: string, out: string) => [
  "experiment",
  ...[
    "--env",
    env,
    "--policy",
    "worker",
    "--policy-url",
    worker,
    "--policy-token",
    inject("policyWorker").token,
    "--policy-model",
    "tiny",
    "--policy-max-tokens",
    "6",
  ],
  ...[
    "--seeds",
    "1",
    "--arms",
    "grpo,harness-s",
    "--steps",
    "1",
    "--train",
    '{"batchSize":2,"groupSize":2}',
    "--eval-tasks",
    "1",
    "--eval-samples",
    "3",
    "--profile-budget",
    "2",
  ],
  ...["--out", out],
];

describe("harness-s experiment --env appworld and --env swe-gym --policy worker (tiny model, local protocol servers)", () => {
  it("runs end to end at the fixture servers it starts, rescuing with the environment's siblings, and writes summary.json and the report", async () => {
    const worker = await sharedPolicyWorker(); // the integration run's (tests/shared-policy-worker.ts)
    for (const [env, sibling, servers] of [
      [
        "appworld",
        "appworld-relogin",
        /4 local AppWorld-protocol servers at (http:\/\/127\.0\.0\.1:\d+(, )?){4} \(fixture tasks, bwrap\)/,
      ],
      ["swe-gym", "swe-blocked-tests-note", /local SWE-ReX-protocol server \(fixture repositories, bwrap\)/],
    ] as const) {
      const out = await mkdtemp(join(tmpdir(), `hs-${env}-`));
      const { stderr } = await run("node", [...cli, ...args(env, worker.url, out)], { timeout: 500_000 });
      const summary = JSON.parse(await readFile(join(out, "summary.json"), "utf8"));
      expect(summary.arms.map((a: { name: string }) => a.name)).toEqual(["grpo", "harness-s"]);
      const harness = summary.arms.find((a: { name: string }) => a.name === "harness-s").perSeed[0];
      expect(harness.rescue.triggered).toBeGreaterThan(0);
      expect(harness.rolloutBreakdown.rescue).toBeGreaterThan(0);
      expect(await readFile(join(out, "report.md"), "utf8")).toMatch(/harness-s/);
      const pools = JSON.parse(await readFile(join(out, "pools.json"), "utf8"));
      expect(pools["1"].siblings.map((s: { id: string }) => s.id)).toContain(sibling);
      expect(stderr).toMatch(servers);
    }
  }, 1_200_000);
});
