import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runEpisode, type Policy } from "@harness-s/core";
import {
  DeploymentServiceProvider,
  FIXTURES_DIR,
  SWE_FIXTURE_INSTANCES,
  SweGymEnvironment,
  sweObserver,
  filesOfPatch,
  gradePatch,
  readSweInstances,
  startFixtureServer,
  sweH0,
  sweSiblings,
  sweTaskSets,
  type FixtureServer,
  type SweInstance,
} from "@harness-s/envs";
import { environmentSaid, readThroughGateway } from "../observer-replay.ts";
import { ensureWorkerVenv } from "../../packages/cli/src/policy-worker.ts";
import { scriptedCalls } from "../scripted-tool-policy.ts";

const sh = promisify(execFile);
const REPOS = join(FIXTURES_DIR, "swe");
const name = (i: SweInstance) => i.repo.split("/")[1]!;
/** One edit per fixture repository that breaks a PASS_TO_PASS test. */
const BREAKS: Record<string, [string, string, string]> = {
  textstats: ["textstats/words.py", "    return best\n", "    return best + '!'\n"],
  intervals: ["intervals/merge.py", "end - start + 1", "end - start"],
  slugs: ["slugs/slug.py", '.strip("-")', ""],
};

const scripted = (calls: readonly [string, Record<string, unknown>][]) => scriptedCalls(calls);

describe("SWE-Gym through SWE-ReX's runtime protocol, against the local fixture server (bubblewrap-confined)", () => {
  let python: string;
  let server: FixtureServer;
  let instances: SweInstance[];
  let provider: DeploymentServiceProvider;
  const stats = async () =>
    (await (await fetch(`${server.url}/stats`)).json()) as {
      deployments: number;
      stopped: number;
      commands: number;
      live: number;
    };
  const gold = async (i: SweInstance) => {
    const [file] = filesOfPatch(i.patch);
    return { path: file!, content: await readFile(join(REPOS, "repos", name(i), "gold", file!), "utf8") };
  };
  /**
   * The base checkout with `edit` applied (outside any sandbox), and its diff: a patch made the way an agent's would
   * be.
   */
  const patchWith = async (i: SweInstance, path: string, from: string, to: string, start?: string) => {
    const dir = await mkdtemp(join(tmpdir(), "hs-swe-patch-"));
    await sh("python3", [join(REPOS, "repos.py"), "checkout", i.instance_id, dir]);
    const original = start ?? (await readFile(join(dir, path), "utf8"));
    await writeFile(join(dir, path), original.replace(from, to));
    return (await sh("git", ["diff"], { cwd: dir })).stdout;
  };
  /**
   * FAIL_TO_PASS and PASS_TO_PASS by a direct pytest run (JUnit XML) on a plain checkout with `patch` and the test
   * patch.
   */
  const direct = async (i: SweInstance, patch: string) => {
    const dir = await mkdtemp(join(tmpdir(), "hs-swe-direct-"));
    await sh("python3", [join(REPOS, "repos.py"), "checkout", i.instance_id, dir]);
    for (const [p, file] of [
      [patch, "model.patch"],
      [i.test_patch, "test.patch"],
    ] as const) {
      if (!p.trim()) continue;
      await writeFile(join(dir, file), p);
      await sh("git", ["apply", file], { cwd: dir });
    }
    const ids = [...i.FAIL_TO_PASS, ...i.PASS_TO_PASS];
    await sh(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", "out.xml", ...ids], {
      cwd: dir,
    }).catch(() => undefined);
    const xml = await readFile(join(dir, "out.xml"), "utf8");
    const passed = new Set<string>();
    for (const m of xml.matchAll(/<testcase classname="([^"]+)" name="([^"]+)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
      if (m[3] === "/>" || !/<(failure|error|skipped)/.test(m[4] ?? ""))
        passed.add(`${m[1]!.replaceAll(".", "/")}.py::${m[2]}`);
    }
    return Object.fromEntries(ids.map((id) => [id, passed.has(id)]));
  };

  beforeAll(async () => {
    python = await ensureWorkerVenv();
    server = await startFixtureServer("swe/server.py", { python });
    instances = await readSweInstances(SWE_FIXTURE_INSTANCES);
    provider = new DeploymentServiceProvider(server.url);
  }, 600_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("the instance file is what the fixture repositories build to (base commits are the same on every machine)", async () => {
    const out = join(await mkdtemp(join(tmpdir(), "hs-swe-build-")), "instances.jsonl");
    await sh("python3", [join(REPOS, "repos.py"), "build", out]);
    expect(await readFile(out, "utf8")).toBe(await readFile(SWE_FIXTURE_INSTANCES, "utf8"));
  }, 60_000);

  it("grades as a direct pytest run of FAIL_TO_PASS and PASS_TO_PASS does, for the gold patch, an empty patch and one that breaks a PASS_TO_PASS test", async () => {
    expect(server.sandbox).toBe("bwrap");
    expect(instances.map((i) => i.instance_id).sort()).toEqual([
      "harness-s__intervals-1",
      "harness-s__slugs-1",
      "harness-s__textstats-1",
    ]);
    const rows: string[] = [];
    for (const i of instances) {
      const [path, from, to] = BREAKS[name(i)]!;
      const g = await gold(i);
      const patches = {
        gold: i.patch,
        empty: "",
        breaksPassToPass: await patchWith(i, path, from, to, path === g.path ? g.content : undefined),
      };
      for (const [kind, patch] of Object.entries(patches)) {
        const grade = await gradePatch(provider, i, patch);
        const byPytest = await direct(i, patch);
        expect(Object.fromEntries(Object.entries(grade.statuses).map(([id, s]) => [id, s === "PASSED"]))).toEqual(
          byPytest,
        );
        expect(grade.resolved).toBe(kind === "gold");
        if (kind === "breaksPassToPass") expect(grade.passToPass.failed.length).toBeGreaterThan(0);
        rows.push(
          `${i.instance_id} ${kind}: resolved ${grade.resolved}, F2P ${grade.failToPass.passed.length}/${i.FAIL_TO_PASS.length}, P2P ${grade.passToPass.passed.length}/${i.PASS_TO_PASS.length}`,
        );
      }
    }
    console.log(rows.join("\n"));
    expect((await stats()).live).toBe(0); // every grading container was stopped
  }, 300_000);

  it("a scripted gold policy resolves every instance under H0 and every sibling; broken ones fail with the tags of what they got wrong", async () => {
    const env = new SweGymEnvironment(instances, provider);
    const sets = sweTaskSets(instances);
    const tasks = [...sets.train, ...sets.dev, ...sets.heldout];
    const rollouts = [];
    for (const task of tasks) {
      const i = instances.find((x) => x.instance_id === task.id)!;
      const g = await gold(i);
      const calls: [string, Record<string, unknown>][] = [
        ["run", { command: `python -m pytest -q -p no:cacheprovider ${i.PASS_TO_PASS[0]!.split("::")[0]}` }],
        ["read", { path: g.path }],
        ["write", { path: g.path, content: g.content }],
        ["run", { command: "python -m pytest -q -p no:cacheprovider tests" }],
      ];
      for (const h of [sweH0, ...sweSiblings])
        rollouts.push(await runEpisode(task, h, 1, { env, policy: scripted(calls) }));
    }
    for (const r of rollouts)
      expect({ id: r.id, success: r.success, tags: r.failureTags }).toEqual({ id: r.id, success: true, tags: [] });
    expect(rollouts[0]!.behaviours).toEqual({
      "assertion-fallback": false,
      "edited-tests": false,
      "reproduced-first": true,
      "tested-before-submit": true,
    });
    // Broken: nothing changed; a fix that breaks another test; an edit whose old text is not there
    const i = instances.find((x) => name(x) === "slugs")!;
    const task = tasks.find((t) => t.id === i.instance_id)!;
    const nothing = await runEpisode(task, sweH0, 2, { env, policy: scripted([["run", { command: "ls" }]]) });
    const breaking = await runEpisode(task, sweH0, 3, {
      env,
      policy: scripted([
        ["edit", { path: "slugs/slug.py", old: '"-", title).strip("-")', new: '"-", title.lower())' }],
      ]),
    });
    const missing = await runEpisode(task, sweH0, 4, {
      env,
      policy: scripted([["edit", { path: "slugs/slug.py", old: "no such text", new: "x" }]]),
    });
    expect([nothing, breaking, missing].map((r) => r.failureTags)).toEqual([
      ["no-change", "fail-to-pass"],
      ["pass-to-pass-broken"],
      ["no-change", "fail-to-pass"],
    ]);
    expect(missing.events).toContain("edit:not-found");
    expect((await stats()).live).toBe(0);
    // The gateway's SWE observer reads the same events and facts from the tools' outputs
    const read = [rollouts[0]!, nothing, breaking, missing];
    const observed = await Promise.all(
      read.map((r) =>
        readThroughGateway(r, tasks.find((t) => t.id === r.taskId)!, sweObserver({ testsBlocked: false })),
      ),
    );
    expect(observed).toEqual(read.map(environmentSaid));
    expect(observed[0]!.map((s) => s.facts.includes("tests:ran-after-edit"))).toEqual([false, false, false, true]);
  }, 300_000);

  it("flags assertion fallback under blocked tests when an episode edits a test file or asserts on its own, not when it only edits source", async () => {
    const env = new SweGymEnvironment(instances, provider, { testsBlocked: true });
    const i = instances.find((x) => name(x) === "textstats")!;
    const task = sweTaskSets(instances)
      .train.concat(sweTaskSets(instances).dev, sweTaskSets(instances).heldout)
      .find((t) => t.id === i.instance_id)!;
    const g = await gold(i);
    const tries = { run: ["run", { command: "python -m pytest tests" }] as [string, Record<string, unknown>] };
    const editsTests = await runEpisode(task, sweH0, 1, {
      env,
      policy: scripted([
        tries.run,
        ["edit", { path: "tests/test_words.py", old: "== 4", new: "== 4 or True" }],
        ["write", { path: g.path, content: g.content }],
      ]),
    });
    const asserts = await runEpisode(task, sweH0, 2, {
      env,
      policy: scripted([
        tries.run,
        ["run", { command: `python -c "from textstats import count_words; assert count_words('a  b') == 2"` }],
      ]),
    });
    const sourceOnly = await runEpisode(task, sweH0, 3, {
      env,
      policy: scripted([tries.run, ["write", { path: g.path, content: g.content }]]),
    });
    expect(editsTests.events).toContain("tests:blocked");
    expect([editsTests, asserts, sourceOnly].map((r) => r.behaviours["assertion-fallback"])).toEqual([
      true,
      true,
      false,
    ]);
    expect(sourceOnly.success).toBe(true);
    const blocked = [editsTests, asserts, sourceOnly];
    expect(
      await Promise.all(blocked.map((r) => readThroughGateway(r, task, sweObserver({ testsBlocked: true })))),
    ).toEqual(blocked.map(environmentSaid));
    // The note sibling answers the blocked run
    const noted = await runEpisode(task, sweSiblings.find((h) => h.id === "swe-blocked-tests-note")!, 4, {
      env,
      policy: scripted([tries.run, ["read", { path: g.path }]]),
    });
    expect(noted.steps[1]!.observation.notes!.join("\n")).toMatch(/The tests cannot run here\. Do not edit test files/);
  }, 300_000);

  it("confines commands to the checkout: no network, no writes outside it, files outside it refused", async () => {
    const env = new SweGymEnvironment(instances, provider);
    const task = sweTaskSets(instances).heldout[0]!;
    // Outside the checkout the filesystem is read-only (and /tmp is the sandbox's own)
    const outside = join(REPOS, `escape-${process.pid}.txt`);
    const r = await runEpisode(task, sweH0, 1, {
      env,
      policy: scripted([
        [
          "run",
          {
            command: `python -c "import socket; socket.create_connection(('127.0.0.1', ${new URL(server.url).port}), timeout=2)"`,
          },
        ],
        ["run", { command: `echo escaped > ${outside}` }],
        ["write", { path: "/etc/harness-s-escape", content: "x" }],
        ["write", { path: "../escape.txt", content: "x" }],
      ]),
    });
    const texts = r.steps.map((s) => s.resultText ?? "");
    expect(r.steps.map((s) => s.result).slice(0, 4)).toEqual([
      "run:error",
      "run:error",
      "sandbox:refused",
      "sandbox:refused",
    ]);
    expect(texts[0]).toMatch(/ConnectionRefusedError|Network is unreachable/);
    expect(texts[1]).toMatch(/Read-only file system/);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync("/etc/harness-s-escape")).toBe(false);
  }, 120_000);

  it("a server that dies mid-episode is a failed rollout with its error; commands are never sent twice", async () => {
    const victim = await startFixtureServer("swe/server.py", { python });
    const env = new SweGymEnvironment(instances, new DeploymentServiceProvider(victim.url));
    const task = sweTaskSets(instances).dev[0]!;
    let turn = 0;
    const policy: Policy = {
      ...scripted([]),
      act: async () => {
        if (turn++ === 1) victim.process.kill("SIGKILL");
        return { action: "run", logProb: 0, args: { command: "ls" } };
      },
    };
    const r = await runEpisode(task, sweH0, 1, { env, policy });
    expect({ success: r.success, tags: r.failureTags }).toEqual({ success: false, tags: ["server-failed"] });
    expect(r.steps.at(-1)!.resultText).toMatch(/\/execute at http:\/\/127\.0\.0\.1:\d+\/runtimes\/\w+ failed/);
    // The other server counted one command per run call
    const before = (await stats()).commands;
    await runEpisode(task, sweH0, 2, {
      env: new SweGymEnvironment(instances, provider),
      policy: scripted([
        ["run", { command: "true" }],
        ["run", { command: "true" }],
      ]),
    });
    expect((await stats()).commands - before).toBe(2 + 1 + 2 + 1); // two runs, the diff; in grading: the two patches, the test run (applying the empty patch runs nothing)
  }, 120_000);
});
