import { Command, CommanderError, type OutputConfiguration } from "commander";
import { ZodError } from "zod";
import { HarnessSError, formatIssues } from "@harness-s/core";
import { addDeclared, type CommandDeclaration } from "./declare.ts";
import { COMMAND_GROUPS, COMMANDS } from "./declared/index.ts";

/** Where the CLI writes: the process's streams, or a test's buffers. */
export interface CliOutput {
  writeOut: (text: string) => void;
  writeErr: (text: string) => void;
}

const processOutput: CliOutput = { writeOut: (t) => process.stdout.write(t), writeErr: (t) => process.stderr.write(t) };

/**
 * The harness-s command line as a commander program (built afresh per run: commander keeps the
 * parsed values on it), from the commands' declarations. Commands load their implementation when
 * they run, so that help and flag errors answer at once.
 */
export function buildProgram(
  output: OutputConfiguration = processOutput,
  commands: readonly CommandDeclaration[] = COMMANDS,
): Command {
  const program = new Command()
    .name("harness-s")
    .description("Selective harness rescue for GRPO agent training, and the harness router.")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput(output);
  const groups = new Map<string, Command>();
  for (const declaration of commands) {
    const group = declaration.name.includes(" ") ? declaration.name.split(" ")[0]! : undefined;
    if (group && !groups.has(group))
      groups.set(group, program.command(group).description(COMMAND_GROUPS[group] ?? group));
    addDeclared(group ? groups.get(group)! : program, declaration);
  }
  return program;
}

/**
 * Runs the CLI on `argv` (as `process.argv`: node, script, arguments) and answers its exit code:
 * 0, or 2 for every usage error (commander's own and the flag schemas'), with the message on
 * `output`'s error stream. Errors that are not usage errors are thrown.
 *
 * @example
 * process.exitCode = await runCli(process.argv);
 */
export async function runCli(argv: readonly string[], output: CliOutput = processOutput): Promise<number> {
  try {
    await buildProgram(output).parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof HarnessSError) {
      output.writeErr(`error [${err.code}]: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ZodError) {
      output.writeErr(`error [VALIDATION_FAILED]: ${formatIssues(err.issues).join("; ")}\n`);
      return 2;
    }
    throw err;
  }
}
