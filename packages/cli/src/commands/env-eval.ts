import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { evaluateTasks } from "@harness-s/core/training";
import { rolloutsIn, type Rollout, type Task } from "@harness-s/core";
import { OpenAiToolPolicy, boundedOpenAi } from "@harness-s/adapters/llm";
import { UsageError } from "../flags.ts";
import { prepareOutDir } from "../out-dir.ts";
import { createProgress } from "../progress.ts";
import { EnvEvalOptions } from "../eval-options.ts";
import { cliIo } from "../family-io.ts";
import { familyFor } from "../families.ts";
import { timestamped } from "../declared/shared.ts";

/** One task's attempts as the summary lists them. */
type TaskResult = {
  id: string;
  successes: number;
  attempts: number;
  rewards: number[];
  failureTags: string[];
  errors: string[];
};

/**
 * `harness-s eval --env <family>` (appworld, swe-gym, or any family registered for eval): the agent
 * at `baseUrl` runs every task of the split `attempts` times under one harness, offered the
 * family's tools (at the given servers, or local fixture servers started and stopped here). Writes summary.json
 * (Pass@3, Avg@3, behaviour rates such as SWE-Gym's
 * assertion fallback, per-task results) and report.md. An attempt the model endpoint fails is a
 * failure with its error recorded; the run goes on, and the count is returned.
 *
 * @example
 * await envEvalCommand({ env: "appworld", baseUrl: "http://127.0.0.1:8000/v1", model: "qwen", out: "results/aw" });
 */
export async function envEvalCommand(
  input: EnvEvalOptions,
  log: (line: string) => void = (l) => console.error(l),
): Promise<{ attempts: number; errored: number }> {
  const parsed = EnvEvalOptions.parse(input);
  const o = {
    ...parsed,
    out: parsed.out ?? timestamped(`results/eval-${parsed.env}-`),
    apiKey: parsed.apiKey ?? "not-needed",
  };
  await prepareOutDir(o.out);
  const family = familyFor(o.env, "eval");
  const opened = await family.open({ command: "eval", options: o, protocol: "test", io: cliIo(log) });
  try {
    const sets = await opened.base.instance(0);
    const { pool } = sets.evolution;
    const harness = chosenHarness(pool, o.env, o.harness);
    const tasks = (o.split === "all" ? [...sets.train, ...sets.dev, ...sets.heldout] : sets[o.split]).slice(0, o.limit);
    const client = boundedOpenAi({
      baseURL: o.baseUrl,
      apiKey: o.apiKey,
      timeoutMs: o.timeoutSeconds * 1000,
      maxRetries: 2,
    });
    let tokens = 0;
    const policy = new OpenAiToolPolicy(client, {
      model: o.model,
      system: family.system,
      tools: family.tools ?? [],
      temperature: o.temperature,
      onUsage: (u) => (tokens += u.promptTokens + u.completionTokens),
    });
    const bar = createProgress(tasks.length * o.attempts, `${o.model} on ${o.env} (${o.split}) under ${harness.id}`);
    const rollouts: { rollout: Rollout; error?: string }[] = [];
    const evaluation = await evaluateTasks(
      tasks,
      () => harness,
      o.attempts,
      0,
      async (task, h, seed) => {
        const done = await rolloutsIn(opened.base.env, policy)(task, h, seed).then(
          (rollout) => ({ rollout }),
          (err: unknown) => ({
            rollout: erroredRollout(task, h.id, seed),
            error: err instanceof Error ? err.message : String(err),
          }),
        );
        rollouts.push(done);
        bar.update(rollouts.length, `${rollouts.filter((r) => r.rollout.success).length}/${rollouts.length} solved`);
        return done.rollout;
      },
    );
    bar.stop();
    const results = tasks.map((t) =>
      taskResult(
        t,
        rollouts.filter((r) => r.rollout.taskId === t.id),
      ),
    );
    const errored = rollouts.filter((r) => r.error).length;
    await writeSummary(o, harness.id, { tokens, errored }, evaluation, results, log);
    return { attempts: rollouts.length, errored };
  } finally {
    await opened.stop();
  }
}

/** The harness `--harness` names in the pool (default its base); a usage error listing the pool's when none is. */
function chosenHarness<H extends { id: string }>(
  pool: { base: H; siblings: readonly H[] },
  env: string,
  wanted: string | undefined,
): H {
  const harness = [pool.base, ...pool.siblings].find((h) => h.id === (wanted ?? pool.base.id));
  if (!harness)
    throw new UsageError(
      `--harness: no ${env} harness ${wanted} (one of ${[pool.base, ...pool.siblings].map((h) => h.id).join(", ")})`,
    );
  return harness;
}

/** Writes the run's summary.json and report.md to its folder, then logs the scores and where they are. */
async function writeSummary(
  o: { env: string; model: string; baseUrl: string; split: string; attempts: number; out: string },
  harnessId: string,
  { tokens, errored }: { tokens: number; errored: number },
  evaluation: Awaited<ReturnType<typeof evaluateTasks>>,
  results: TaskResult[],
  log: (line: string) => void,
): Promise<void> {
  const summary = {
    env: o.env,
    model: o.model,
    baseUrl: o.baseUrl,
    harness: harnessId,
    split: o.split,
    attempts: o.attempts,
    tokens,
    errored,
    ...evaluation,
    results,
  };
  await writeFile(join(o.out, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  await writeFile(join(o.out, "report.md"), report(summary));
  log(
    `Pass@3 ${(100 * evaluation.passAt3).toFixed(1)}%  Avg@3 ${(100 * evaluation.avgAt3).toFixed(1)}%  errored attempts ${errored}  tokens ${tokens}`,
  );
  log(`summary.json and report.md in ${o.out}`);
}

const erroredRollout = (task: Task, harnessId: string, seed: number): Rollout => ({
  id: `${task.id}:${harnessId}:${seed}`,
  taskId: task.id,
  family: task.family,
  harnessId,
  policyVersion: 0,
  seed,
  steps: [],
  reward: 0,
  success: false,
  failureTags: ["rollout-error"],
  events: [],
  behaviours: {},
});

function taskResult(task: Task, attempts: readonly { rollout: Rollout; error?: string }[]): TaskResult {
  return {
    id: task.id,
    successes: attempts.filter((a) => a.rollout.success).length,
    attempts: attempts.length,
    rewards: attempts.map((a) => a.rollout.reward),
    failureTags: [...new Set(attempts.flatMap((a) => a.rollout.failureTags))].sort(),
    errors: attempts.flatMap((a) => (a.error ? [a.error] : [])),
  };
}

function report(s: {
  env: string;
  model: string;
  harness: string;
  split: string;
  attempts: number;
  passAt3: number;
  avgAt3: number;
  behaviours: Record<string, number>;
  results: TaskResult[];
}): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  return [
    `# ${s.model} on ${s.env} (${s.split}) under ${s.harness}`,
    "",
    `${s.results.length} tasks × ${s.attempts} attempts: Pass@3 ${pct(s.passAt3)}, Avg@3 ${pct(s.avgAt3)}.`,
    "",
    "| behaviour | share of attempts |",
    "|---|---|",
    ...Object.entries(s.behaviours).map(([b, x]) => `| ${b} | ${pct(x)} |`),
    "",
    "| task | solved | mean reward | failure tags |",
    "|---|---|---|---|",
    ...s.results.map(
      (r) =>
        `| ${r.id} | ${r.successes}/${r.attempts} | ${(r.rewards.reduce((a, b) => a + b, 0) / Math.max(1, r.rewards.length)).toFixed(2)} | ${r.failureTags.join(", ")} |`,
    ),
    "",
  ].join("\n");
}
