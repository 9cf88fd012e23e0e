import type { ToolBinding } from "@harness-s/core/gateway";

/** What a text agent is told on AppWorld (its ReAct setting, in our words). */
export const APPWORLD_SYSTEM = [
  "You act for a supervisor inside their apps. Each app's APIs are Python functions: apis.<app>.<api>(...).",
  "In every round call exactly one tool. `execute` runs Python code (print what you need to see) and returns its output.",
  "Read the apps with apis.api_docs.show_app_descriptions(), an app's APIs with apis.api_docs.show_api_descriptions(app_name=...).",
  "The supervisor's passwords are in apis.supervisor.show_account_passwords(); log in to an app before using it.",
  "When the task is done, call `complete_task`, with the answer if the task asks a question.",
].join("\n");

export const appworldTools: ToolBinding[] = [
  {
    name: "execute",
    action: "execute",
    description: "Run Python code against the apps (apis.<app>.<api>(...)) and return what it printed.",
    parameters: {
      type: "object",
      properties: { code: { type: "string", description: "Python code" } },
      required: ["code"],
    },
  },
  {
    name: "complete_task",
    action: "submit",
    description: "Mark the task complete (with the answer, if it asks a question); the episode ends.",
    parameters: {
      type: "object",
      properties: { answer: { type: ["string", "number", "null"], description: "the answer, if any" } },
      required: [],
    },
  },
];
