import { mkdir } from "node:fs/promises";
import { z } from "zod";
import {
  ValidationError,
  createPool,
  parseOrThrow,
  type Environment,
  type HarnessPool,
  type HarnessSpec,
  type Protocol,
  type Task,
  type TaskSource,
} from "@harness-s/core";
import type { ExperimentDeps, ExperimentSummary, SeedBaseline, SeedInstance } from "@harness-s/core/experiment";
import { statisticalVoters } from "@harness-s/core/voting";
import type { ObserverFactory, ToolBinding } from "@harness-s/core/gateway";
import type { ToolSchema } from "@harness-s/core/protocol";
import type { CallerTask } from "@harness-s/core/callers";
import type { EmbeddedSettings } from "./embedded/setup.ts";

/**
 * Benchmark families as a registry (as experiment arms are): a family declares its tools and
 * system text, H0 and siblings, how it opens its environment and task sets, how the gateway reads
 * its tool outputs, and the flags it adds to the commands that run it. Every command and setup
 * reads a family from here; none names one. `functions/families.ts` registers the built-in four.
 */

/** The commands a family can run under: each adds the family's flags ({@link BenchmarkFamily.flags}). */
export const FAMILY_COMMANDS = ["experiment", "eval", "env-serve"] as const;
export type FamilyCommand = (typeof FAMILY_COMMANDS)[number];
/**
 * What a family can be asked for: a command, the gateway's reading of its tool outputs, its own evolution or benchmark.
 */
export type FamilyUse = FamilyCommand | "gateway" | "evolve" | "bench";

/** What the command running a family lends it. */
export interface FamilyIo {
  log: (line: string) => void;
  /** A Python with the fixture servers' packages (the CLI: the policy worker's venv, made if missing). */
  python: () => Promise<string>;
  progress: (total: number, title: string) => { update(value: number, label: string): void; stop(): void };
  /** Makes an output folder before any work (the CLI's names the flag of one it cannot write in). */
  prepareOutDir: (dir: string) => Promise<void>;
}

/** A plain io for callers outside the CLI (tests, scripts): log to stderr, no progress, `python3`. */
export const plainIo: FamilyIo = {
  log: (line) => process.stderr.write(`${line}\n`),
  python: async () => "python3",
  progress: () => ({ update: () => undefined, stop: () => undefined }),
  prepareOutDir: async (dir) => void (await mkdir(dir, { recursive: true })),
};

/**
 * How a family is shown to a token policy: its system text, tools as JSON schemas, the environment a text agent sees.
 */
export interface FamilyRendering {
  system: string;
  toolSchemas: (offered: readonly string[]) => ToolSchema[];
  /** The function name of an action where they differ (`commit_final_answer` for `submit`). */
  toolNames?: Readonly<Record<string, string>>;
  env: (base: Environment) => Environment;
}

/** A command's request to open a family. */
export interface OpenRequest {
  command: FamilyCommand;
  /** The command's parsed flags: the family reads its own ({@link familyOptions}). */
  options: Readonly<Record<string, unknown>>;
  /** test: evaluate on the held-out split; validation: on a held-back part of train. */
  protocol: Protocol;
  /** The experiment's suite settings (`--cue-rate`, `--fixed-suite`, …; the embedded suite reads them). */
  suite?: Partial<EmbeddedSettings>;
  /** Evolution's progress, where a family evolves its pool per seed. */
  onEvolution?: (seed: number, done: number, total: number) => void;
  io: FamilyIo;
}

/** A family opened for an experiment or an evaluation: its environment, task sets and pool per seed. */
export interface OpenedFamily {
  /** The environment, the seed instances (train, dev, held-out, the pool) and, for an own-policy family, its policy. */
  base: Omit<ExperimentDeps, "onProgress">;
  /** A section the experiment's report.md ends with (DBBench: AgentBench's accuracies). */
  reportSection?: (
    summary: ExperimentSummary,
    baselines: readonly SeedBaseline[],
    evaluated: readonly Task[],
  ) => string;
  /** Stops what opening started (servers, database connections). */
  stop: () => Promise<void>;
}

/** A family as `env-serve` serves it over the OpenEnv protocol. */
export interface ServedFamily {
  env: Environment;
  tasks: TaskSource;
  /** The tasks a reset without `task_id` draws from. */
  resetTasks: readonly string[];
  describeTools: (
    actions: readonly string[],
  ) => { name: string; description: string; input_schema: Record<string, unknown> }[];
  /** The action that ends an episode. */
  submit: string;
  /** The training tasks as a caller's rescue carries them (`env-serve --tasks-out`). */
  trainTasks?: () => CallerTask[];
  shutdown: () => Promise<void>;
}

/** How the gateway reads an agent's tool outputs on this family. */
export interface GatewayReading {
  observerFor: ObserverFactory;
  /** The agent's committing tool (the commit gate's `submit`). */
  submitTool: string;
  /** A task's family when the agent names none. */
  defaultFamily: string;
  parseArguments?: (raw: string) => Record<string, unknown>;
}

export interface BenchmarkFamily {
  /** The `--env` value, and the id of the pool built from {@link h0} and {@link siblings}. */
  name: string;
  /** How help lists it, e.g. `dbbench (the fixed splits, AgentBench's accuracies in the report)`. */
  summary: string;
  commands: readonly FamilyCommand[];
  /**
   * own: its base brings a policy trained in process (`--policy worker` optional); worker: it trains an LLM at a policy
   * worker only.
   */
  policy: "own" | "worker";
  /**
   * Its experiment may run the sweeps and the local-aws runtime (both run the embedded suite's settings through the
   * Lambda handlers).
   */
  sweepsAndLocalAws?: boolean;
  system: string;
  /**
   * The tools an OpenAI-compatible agent is offered (`eval` needs them); the token rendering unless {@link rendering}
   * is given.
   */
  tools?: readonly ToolBinding[];
  rendering?: FamilyRendering;
  h0: HarnessSpec;
  /** The hand-written siblings (none where the pool is evolved per seed). */
  siblings: readonly HarnessSpec[];
  /** The flags the family adds to a command it runs under (each a `flag()` field; no two families may share one). */
  flags?: (command: FamilyCommand) => z.ZodRawShape;
  open: (req: OpenRequest) => Promise<OpenedFamily>;
  /** What an experiment's checkpoint is keyed by beside its config, from its flags (a resumed run must match it). */
  runKey?: (req: Pick<OpenRequest, "command" | "options">) => Record<string, unknown>;
  /** `env-serve`'s parts; default {@link servedFrom} the opened family. */
  serve?: (req: OpenRequest) => Promise<ServedFamily>;
  gateway?: () => Promise<GatewayReading>;
  /** The pool `serve` registers at start under the family's name. */
  servePool?: () => HarnessPool;
  /** The family's own `evolve` (how help names it; its flags join the command's; `run` gets them all). */
  evolve?: {
    summary: string;
    flags: z.ZodRawShape;
    run: (options: Readonly<Record<string, unknown>>, io: FamilyIo) => Promise<unknown>;
  };
  /** The family's own `bench`: the lines it prints. */
  bench?: (options: Readonly<Record<string, unknown>>) => Promise<string[]>;
}

const NAME = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lower-case letters, digits and dashes");
const registry = new Map<string, BenchmarkFamily>();

function supports(f: BenchmarkFamily, use?: FamilyUse): boolean {
  if (!use) return true;
  if ((FAMILY_COMMANDS as readonly string[]).includes(use)) return f.commands.includes(use as FamilyCommand);
  return f[use as Exclude<FamilyUse, FamilyCommand>] !== undefined;
}

/**
 * Adds a family (as `registerArm` adds an arm); its name must be new, and its flags must not be
 * another family's.
 *
 * @example
 * registerFamily({ name: "toy", summary: "toy (one tool)", commands: ["experiment"], policy: "own", system, h0, siblings: [], open });
 */
export function registerFamily(family: BenchmarkFamily): BenchmarkFamily {
  const problems = [...(NAME.safeParse(family.name).error?.issues.map((i) => i.message) ?? [])];
  if (registry.has(family.name)) problems.push("already registered");
  if (family.commands.includes("eval") && !family.tools)
    problems.push("eval offers an agent the family's tools: declare them");
  for (const command of family.commands) {
    const taken = Object.keys(familyFlags(command));
    const clash = Object.keys(family.flags?.(command) ?? {}).filter((k) => taken.includes(k));
    if (clash.length) problems.push(`${command} already has the flags ${clash.join(", ")}`);
  }
  if (problems.length) throw new ValidationError(`benchmark family ${family.name}`, problems);
  registry.set(family.name, family);
  return family;
}

/** The registered families' names in registration order; with `use`, those that support it. */
export const familyNames = (use?: FamilyUse): string[] =>
  [...registry.values()].filter((f) => supports(f, use)).map((f) => f.name);

const unknown = (name: string, use?: FamilyUse) =>
  `${registry.has(name) ? `${name} has no ${use}` : `unknown environment ${JSON.stringify(name)}`} (${use ? `${use}: ` : ""}${familyNames(use).join(", ")})`;

/** A registered family; an unknown name (or one without `use`) is a {@link ValidationError} listing the known ones. */
export function familyFor(name: string, use?: FamilyUse): BenchmarkFamily {
  const family = registry.get(name);
  if (!family || !supports(family, use)) throw new ValidationError("environment", [unknown(name, use)]);
  return family;
}

/** A family's name, checked against the registry when parsed (so a family registered later is known). */
export const FamilyName = (use?: FamilyUse) =>
  z.string().superRefine((name, ctx) => {
    const family = registry.get(name);
    if (!family || !supports(family, use)) ctx.addIssue({ code: "custom", message: unknown(name, use) });
  });

/** The flags every family running under `command` adds, in registration order. */
export function familyFlags(command: FamilyCommand): z.ZodRawShape {
  return Object.assign(
    {},
    ...[...registry.values()].filter((f) => f.commands.includes(command)).map((f) => f.flags?.(command) ?? {}),
  );
}

/** A family's own flags as `req` gives them (defaults filled in for a caller that gives fewer). */
export function familyOptions<S extends z.ZodRawShape>(
  shape: S,
  req: Pick<OpenRequest, "options">,
): z.infer<z.ZodObject<S>> {
  return parseOrThrow(z.object(shape), req.options, "the family's options") as z.infer<z.ZodObject<S>>;
}

/** A family's token rendering: its own, or its system text and tools (names where they differ from the action). */
export function renderingOf(family: Pick<BenchmarkFamily, "system" | "tools" | "rendering">): FamilyRendering {
  if (family.rendering) return family.rendering;
  const tools = family.tools ?? [];
  return {
    system: family.system,
    toolSchemas: (offered) =>
      tools
        .filter((t) => offered.includes(t.action))
        .map((t) => ({
          type: "function" as const,
          function: { name: t.name, description: t.description, parameters: t.parameters },
        })),
    toolNames: Object.fromEntries(tools.filter((t) => t.name !== t.action).map((t) => [t.action, t.name])),
    env: (base) => base,
  };
}

/** The family's pool: H0 and its hand-written siblings, under the family's name. */
export const familyPool = (family: Pick<BenchmarkFamily, "name" | "h0" | "siblings">, note: string): HarnessPool =>
  createPool(family.name, family.h0, [...family.siblings], { note });

/**
 * `env-serve`'s parts from an opened family: seed 0's tasks by id, its train tasks for resets,
 * its tools described by the family's rendering, `submit` ending the episode.
 */
export async function servedFrom(family: BenchmarkFamily, opened: OpenedFamily): Promise<ServedFamily> {
  const sets = await opened.base.instance(0);
  const byId = new Map([...sets.train, ...sets.dev, ...sets.heldout].map((t) => [t.id, t]));
  const rendering = renderingOf(family);
  const schemaOf = (action: string) => rendering.toolSchemas([action])[0]?.function;
  return {
    env: opened.base.env,
    tasks: { get: async (id) => byId.get(id) },
    resetTasks: sets.train.map((t) => t.id),
    describeTools: (actions) =>
      actions.map((a) => ({
        name: a,
        description: schemaOf(a)?.description ?? "",
        input_schema: schemaOf(a)?.parameters ?? {},
      })),
    submit: "submit",
    shutdown: opened.stop,
  };
}

/**
 * The experiment base of a family whose policy is an LLM at a policy worker (the worker's setup
 * puts its policies in): the environment, the same task sets and pool for every seed.
 */
export const workerOnlyBase = (
  title: string,
  env: Environment,
  sets: Pick<SeedInstance, "train" | "dev" | "heldout">,
  evolution: SeedInstance["evolution"],
): OpenedFamily["base"] => ({
  env,
  createPolicy: () => {
    throw new Error(`${title} experiments train a worker's policy (--policy worker)`);
  },
  voters: statisticalVoters,
  instance: async () => ({ train: sets.train, dev: sets.dev, heldout: sets.heldout, evolution }),
});
