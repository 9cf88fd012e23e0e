import { describe, expect, it } from "vitest";
import { runEpisode, type ActionChoice, type Policy } from "@harness-s/core";
import {
  APPWORLD_FIXTURE_TASKS,
  AppWorldEnvironment,
  EnvironmentServerError,
  SERVER_FAILED_EVENT,
  appworldSiblings,
  appworldTaskSets,
  type AppWorldServerPool,
} from "@harness-s/envs";

/** A pool of one server that fails every execute, counting them and its releases. */
function dyingPool() {
  const seen = { executes: 0, released: 0 };
  const server = {
    execute: async () => {
      seen.executes++;
      throw new EnvironmentServerError("http://127.0.0.1:1", "/execute", "HTTP 500: the process of the task has died");
    },
  };
  const pool = {
    lend: async () => ({ server, instruction: "Mark the groceries done.", release: async () => void seen.released++ }),
  } as unknown as AppWorldServerPool;
  return { pool, seen };
}

const executes: Policy = {
  version: () => 0,
  act: async (): Promise<ActionChoice> => ({ action: "execute", logProb: 0, args: { code: "print(1)" } }),
  update: async () => ({ loss: 0 }) as never,
};

describe("an AppWorld episode whose server dies", () => {
  it("during the api-docs preview is a failed rollout (server-failed, its error in the first step), with nothing sent again and the server released", async () => {
    const { pool, seen } = dyingPool();
    const env = new AppWorldEnvironment(pool, "test");
    const sets = appworldTaskSets(APPWORLD_FIXTURE_TASKS);
    const recon = appworldSiblings.find((h) => h.id === "appworld-api-docs")!;
    const rollout = await runEpisode(sets.train[0]!, recon, 1, { env, policy: executes });
    expect({ success: rollout.success, tags: rollout.failureTags, steps: rollout.steps.length }).toEqual({
      success: false,
      tags: ["server-failed"],
      steps: 1,
    });
    expect(rollout.steps[0]!.result).toBe(SERVER_FAILED_EVENT);
    expect(rollout.steps[0]!.resultText).toMatch(/the process of the task has died/);
    expect(seen).toEqual({ executes: 1, released: 1 });
  });
});
