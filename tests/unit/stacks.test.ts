import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tableSpecs } from "@harness-s/adapters/dynamo";

const stacks = readFileSync("stacks/control-plane.ts", "utf8") + readFileSync("infra/settings.ts", "utf8");

describe("stacks (static checks; the SST typecheck and tests/infra run in npm test)", () => {
  it("every handler a stack references exists and exports `handler`", () => {
    const handlers = [...stacks.matchAll(/handler: "([^"]+)\.handler"/g)].map((m) => m[1]!);
    expect(handlers.length).toBeGreaterThanOrEqual(2);
    for (const h of handlers) {
      expect(existsSync(`${h}.ts`), `${h}.ts`).toBe(true);
      expect(readFileSync(`${h}.ts`, "utf8")).toMatch(/export const handler\b/);
    }
  });

  it("declares every shared table in the hand-kept sst-env.d.ts", () => {
    const env = readFileSync("sst-env.d.ts", "utf8");
    for (const t of tableSpecs) expect(env).toContain(`${t.name}: { name: string; type: "sst.aws.Dynamo" }`);
  });
});
