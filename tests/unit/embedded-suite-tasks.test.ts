import { describe, expect, it } from "vitest";
import { defaultEmbeddedSettings, embeddedSetup, embeddedSuiteTasks } from "@harness-s/envs";

// `env-serve --env embedded` serves seed 1's tasks built without the pool its instance evolves: they must be the
// instance's own tasks, or a rescue naming a task of the served environment would find another task there.
describe("the embedded suite's tasks without its pool", () => {
  it("are the instance's train, dev and held-out tasks, for the same settings and seed", async () => {
    const instance = await embeddedSetup(defaultEmbeddedSettings).instance(1);
    const tasks = embeddedSuiteTasks(defaultEmbeddedSettings, 1);
    expect(tasks).toEqual({ train: instance.train, dev: instance.dev, heldout: instance.heldout });
    expect(embeddedSuiteTasks(defaultEmbeddedSettings, 2).train).not.toEqual(instance.train);
  });
});
