import { describe, expect, it } from "vitest";
import { ModelFolders, ServeOptions } from "../../packages/cli/src/declared/serve-options.ts";

const issues = (given: unknown) =>
  ModelFolders.safeParse(given).error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`);

describe("serve --models name=DIR,…", () => {
  it("reads each model's name and folder, and reads its own result again (serve parses what the command line parsed)", () => {
    const parsed = ServeOptions.parse({ models: "a=/m/one, b=/m/two" }).models;
    expect(parsed).toEqual([
      { name: "a", dir: "/m/one" },
      { name: "b", dir: "/m/two" },
    ]);
    expect(ServeOptions.parse({ models: parsed }).models).toEqual(parsed);
    expect(ServeOptions.parse({}).models).toBeUndefined();
    // `--models none`, parsed by the command line and again by the command: none, both times.
    expect(ServeOptions.parse(ServeOptions.parse({ models: "none" })).models).toEqual([]);
  });

  it("refuses a model without a folder, a name twice, a bad name and nothing at all, saying which", () => {
    expect(issues("a")).toEqual(["0.dir: name=DIR: a model folder after its name"]);
    expect(issues("a=/x,a=/y")).toEqual([": each model name once"]);
    expect(issues("bad name=/x")?.[0]).toMatch(/^0\.name: start with a letter or digit/);
    expect(issues("")).toEqual([": name=DIR, one or more, comma-separated"]);
  });
});
