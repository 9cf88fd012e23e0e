import { describe, expect, it } from "vitest";
import { ValidationError } from "@harness-s/core";
import { EMBEDDED_ONLY, ExperimentRequest, ensureOffered } from "@harness-s/core/experiment";

const tool = (name: string, submit = false) => ({ name, submit });
const task = (id: string, split: string) => ({
  id,
  family: "mine",
  tools: [tool("look"), tool("answer", true)],
  split,
});

describe("an experiment's environment and model (issue 57)", () => {
  it("defaults to the embedded suite and its own policy, which every deployment runs", () => {
    const req = ExperimentRequest.parse({});
    expect([req.env, req.model]).toEqual(["embedded", undefined]);
    expect(() => ensureOffered(req)).not.toThrow();
  });

  it("refuses a family, a caller's environment or a model the deployment does not run, naming what it runs", () => {
    const offers = { envs: ["embedded", "dbbench"], callerEnvironments: false, models: ["tiny-a", "tiny-b"] };
    expect(() => ensureOffered({ env: "appworld" }, offers)).toThrow(
      /runs experiments on embedded, dbbench, not appworld/,
    );
    expect(() => ensureOffered({ env: "dbbench", model: "llama" }, offers)).toThrow(/serves tiny-a, tiny-b, not llama/);
    expect(() => ensureOffered({ env: "embedded", model: "tiny-a" }, EMBEDDED_ONLY)).toThrow(ValidationError);
    const caller = ExperimentRequest.parse({
      env: {
        kind: "openenv",
        url: "https://env.example.com",
        tasks: [task("a", "train"), task("b", "dev"), task("c", "held-out")],
      },
    }).env;
    expect(() => ensureOffered({ env: caller }, offers)).toThrow(/not openenv/);
    expect(() =>
      ensureOffered({ env: caller, model: "tiny-b" }, { ...offers, callerEnvironments: true }),
    ).not.toThrow();
  });

  it("takes a caller's tasks only with a task in each of train, dev and held-out, each id once", () => {
    const env = (tasks: unknown[]) =>
      ExperimentRequest.safeParse({ env: { kind: "openenv", url: "https://env.example.com", tasks } });
    expect(
      env([task("a", "train"), task("b", "dev"), task("c", "train")]).error?.issues.map((i) => i.message),
    ).toContain("no task in the held-out split: each of train, dev and held-out needs one");
    expect(
      env([task("a", "train"), task("a", "dev"), task("c", "held-out")]).error?.issues.map((i) => i.message),
    ).toContain("task id a appears twice");
    expect(env([task("a", "train"), task("b", "dev"), task("c", "held-out")]).success).toBe(true);
  });
});
