import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type CommandDeclaration, declareCommand, flag } from "../../packages/cli/src/declare.ts";
import { COMMANDS } from "../../packages/cli/src/declared/index.ts";
import { int } from "../../packages/cli/src/flags.ts";
import { buildProgram } from "../../packages/cli/src/program.ts";

/** The program over `commands`, its output kept: help and errors as the user would read them. */
async function runWith(
  commands: readonly CommandDeclaration[],
  args: string[],
): Promise<{ out: string; error?: unknown }> {
  let out = "";
  const program = buildProgram({ writeOut: (t) => (out += t), writeErr: (t) => (out += t) }, commands);
  try {
    await program.parseAsync(["node", "harness-s", ...args]);
    return { out };
  } catch (error) {
    return { out, error };
  }
}

describe("commands as declarations", () => {
  it("a flag added to one declaration's schema is in help with its default, parsed, and bounded — nothing else touched", async () => {
    // Prepare: confirm's declaration with one more field, its run recording what it is given
    const seen: unknown[] = [];
    const original = COMMANDS.find((c) => c.name === "confirm")!;
    const extended = declareCommand({
      ...original,
      flags: original.flags.extend({ retries: flag(int(1, 9).default(3), "<n>", "attempts per job before giving up") }),
      run: async (flags, args) => void seen.push({ flags, args }),
    });
    const commands = COMMANDS.map((c) => (c === original ? extended : c)) as CommandDeclaration[];
    // Act
    const help = await runWith(commands, ["confirm", "--help"]);
    await runWith(commands, ["confirm", "C9"]);
    await runWith(commands, ["confirm", "C9", "--retries", "5", "--jobs=4"]);
    const tooMany = await runWith(commands, ["confirm", "C9", "--retries", "10"]);
    // Assess
    expect(help.out).toMatch(/--retries <n>\s+attempts per job before giving up \(default: 3\)/);
    expect(seen).toEqual([
      { flags: { jobs: 2, retries: 3 }, args: ["C9"] },
      { flags: { jobs: 4, retries: 5 }, args: ["C9"] },
    ]);
    expect(String(tooMany.error)).toMatch(/--retries "10": Too big.*\(see harness-s confirm --help\)/);
  });

  it("a value the user did not give is the schema's default, applied by the schema (not a second default in commander)", async () => {
    const seen: unknown[] = [];
    const declaration = declareCommand({
      name: "probe",
      summary: "a probe",
      flags: z.strictObject({
        level: flag(z.enum(["low", "high"]).default("low"), "<l>", "how loud"),
        count: flag(int(0, 5).default(1), "<n>", "how many"),
        color: flag(z.boolean().default(true), null, "plain output", { negate: true }),
        name: flag(z.string().min(1), "<name>", "who"),
      }),
      run: async (flags) => void seen.push(flags),
    });
    const help = await runWith([declaration], ["probe", "--help"]);
    await runWith([declaration], ["probe", "--name", "a"]);
    await runWith([declaration], ["probe", "--name", "b", "--no-color", "--level", "high"]);
    const missing = await runWith([declaration], ["probe"]);
    expect(help.out).toMatch(/--level <l>\s+how loud \(choices: "low", "high", default: "low"\)/);
    expect(help.out).toMatch(/--no-color\s+plain output/);
    expect(seen).toEqual([
      { level: "low", count: 1, color: true, name: "a" },
      { level: "high", count: 1, color: false, name: "b" },
    ]);
    expect(missing.out).toMatch(/required option '--name <name>' not specified/);
  });

  it("every declared flag has a description and, unless a switch, a placeholder (the program refuses to build otherwise)", () => {
    expect(() => buildProgram(undefined, COMMANDS)).not.toThrow();
    const bare = declareCommand({
      name: "bare",
      summary: "x",
      flags: z.strictObject({ n: int(0) }),
      run: async () => {},
    });
    expect(() => buildProgram(undefined, [bare])).toThrow(/flag n: no description/);
    const noArg = declareCommand({
      name: "noarg",
      summary: "x",
      flags: z.strictObject({ n: flag(int(0), null, "a number") }),
      run: async () => {},
    });
    expect(() => buildProgram(undefined, [noArg])).toThrow(/flag n: a value flag needs a placeholder/);
  });

  it("serve --allow-endpoint-cidr is repeatable, each CIDR canonical, a bad one a usage error naming it (issue 55, item 6)", async () => {
    const seen: unknown[] = [];
    const original = COMMANDS.find((c) => c.name === "serve")!;
    const recording = declareCommand({
      ...original,
      run: async (flags) => void seen.push((flags as { allowEndpointCidr: string[] }).allowEndpointCidr),
    });
    const commands = COMMANDS.map((c) => (c === original ? recording : c)) as CommandDeclaration[];
    await runWith(commands, ["serve"]);
    await runWith(commands, ["serve", "--allow-endpoint-cidr", "10.0.0.0/8", "--allow-endpoint-cidr", "FD00:0::/8"]);
    const hostBits = await runWith(commands, [
      "serve",
      "--allow-endpoint-cidr",
      "10.0.0.0/8",
      "--allow-endpoint-cidr",
      "192.168.1.0/16",
    ]);
    const notCidr = await runWith(commands, ["serve", "--allow-endpoint-cidr", "10.0.0.0"]);
    const help = await runWith(commands, ["serve", "--help"]);
    expect(seen).toEqual([[], ["10.0.0.0/8", "fd00::/8"]]);
    expect(String(hostBits.error)).toMatch(
      /--allow-endpoint-cidr .*"192\.168\.1\.0\/16": bits are set past the \/16 prefix: write 192\.168\.0\.0\/16/,
    );
    expect(String(notCidr.error)).toMatch(
      /--allow-endpoint-cidr .*not a CIDR: an address, a slash and a prefix length/,
    );
    expect(help.out.replace(/\s+/g, " ")).toMatch(
      /--allow-endpoint-cidr <cidr> let callers. policy endpoints and environments be in this private block \(repeatable/,
    );
  });
});
