import type { TaskSource } from "@harness-s/core";
import { TextEnvironment, buildSuite, defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

/** The embedded suite's tasks (instance 1, the one `serve` registers) by id. */
export function embeddedTaskSource(seed = 1): TaskSource {
  const suite = buildSuite({ seed, cueRate: 0.2 });
  const byId = new Map([...suite.train, ...suite.dev, ...suite.heldout].map((t) => [t.id, t]));
  return { get: async (id) => byId.get(id) };
}

/**
 * This service's own environments a caller's rescue may name (`{"kind": "builtin", "id": "embedded"}`): the embedded
 * suite as text.
 */
export function builtinEnvironments(): { embedded: TextEnvironment } {
  return { embedded: new TextEnvironment(embeddedSetup(defaultEmbeddedSettings).env) };
}
