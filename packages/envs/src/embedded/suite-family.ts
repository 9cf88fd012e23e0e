import { registerFamily, type OpenRequest, type ServedFamily } from "../registry.ts";
import { embeddedCallerTask } from "./caller-task.ts";
import { evolveEmbedded } from "./evolve.ts";
import { embeddedH0 } from "./h0.ts";
import { defaultEmbeddedSettings, embeddedSetup, embeddedSuiteTasks } from "./setup.ts";
import { EMBEDDED_AGENT_SYSTEM, TextEnvironment, embeddedRendering, embeddedToolSchemas } from "./text.ts";

// The embedded suite as a benchmark family (its file is not family.ts: that one holds the suite's
// own task families, app, db and repair).

/** The suite for an experiment: the settings given, each seed's instance with its own evolved pool (or one shared). */
const setupOf = (req: OpenRequest) => embeddedSetup({ ...defaultEmbeddedSettings, ...req.suite }, req.onEvolution);

/**
 * Seed 1's instance served: its train, dev and held-out tasks by id, events and facts as text (the suite alone: the
 * pool the instance evolves is the service's, not the environment's, and building it is most of a start's CPU).
 */
async function serveEmbedded(req: OpenRequest): Promise<ServedFamily> {
  const setup = setupOf(req);
  const instance = embeddedSuiteTasks({ ...defaultEmbeddedSettings, ...req.suite }, 1);
  const byId = new Map([...instance.train, ...instance.dev, ...instance.heldout].map((t) => [t.id, t]));
  return {
    trainTasks: () => instance.train.map((t) => embeddedCallerTask(setup.env, t)),
    resetTasks: instance.train.map((t) => t.id),
    env: new TextEnvironment(setup.env),
    tasks: { get: async (id) => byId.get(id) },
    describeTools: (actions) =>
      embeddedToolSchemas(actions).map((t) => ({
        name: t.function.name,
        description: t.function.description,
        input_schema: t.function.parameters,
      })),
    submit: "submit",
    shutdown: async () => undefined,
  };
}

export const embedded = registerFamily({
  name: "embedded",
  summary: "embedded (the suite)",
  commands: ["experiment", "env-serve"],
  policy: "own",
  sweepsAndLocalAws: true,
  system: EMBEDDED_AGENT_SYSTEM,
  rendering: embeddedRendering,
  h0: embeddedH0,
  siblings: [],
  open: async (req) => ({ base: setupOf(req), stop: async () => undefined }),
  serve: serveEmbedded,
  evolve: { summary: "embedded (on the suite instance of --seed)", flags: {}, run: evolveEmbedded },
});
