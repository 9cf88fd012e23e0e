import type { ToolBinding } from "@harness-s/core/gateway";

/** What a text agent is told on SWE-Gym (a SWE-agent-like setting, in our words). */
export const SWE_SYSTEM = [
  "You fix an issue in a Python repository checked out at /testbed. In every round call exactly one tool.",
  "`run` runs a shell command in /testbed; `read` shows a file; `edit` replaces one exact piece of text in a file; `write` writes a whole file.",
  "Make the smallest change to the code that resolves the issue; do not change the tests.",
  "When the fix is done, call `submit`.",
].join("\n");

export const sweTools: ToolBinding[] = [
  {
    name: "run",
    action: "run",
    description: "Run a shell command in /testbed.",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
  {
    name: "read",
    action: "read",
    description: "Show a file of the repository.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
  {
    name: "edit",
    action: "edit",
    description: "Replace the exact text `old` in a file by `new`.",
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, old: { type: "string" }, new: { type: "string" } },
      required: ["path", "old", "new"],
    },
  },
  {
    name: "write",
    action: "write",
    description: "Write a whole file.",
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path", "content"],
    },
  },
  {
    name: "submit",
    action: "submit",
    description: "Submit the change; the episode ends.",
    parameters: { type: "object", properties: {}, required: [] },
  },
];
