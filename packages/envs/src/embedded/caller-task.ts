import type { Environment, Task } from "@harness-s/core";
import type { CallerTask } from "@harness-s/core/callers";
import { embeddedToolSchemas } from "./text.ts";

/** An embedded task as a caller's rescue carries it: its text, tags and tools (`submit` the committing one). */
export function embeddedCallerTask(env: Pick<Environment, "tools">, task: Task): CallerTask {
  const tools = embeddedToolSchemas(env.tools(task)).map(({ function: f }) => ({
    name: f.name,
    description: f.description,
    parameters: f.parameters,
    submit: f.name === "submit",
  }));
  return { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction, tools, reset: {} };
}
