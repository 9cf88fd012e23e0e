import type { ToolBinding } from "@harness-s/adapters/llm";
import { PyFloatLiteral, parseJsonPy } from "./json-py.ts";
import { pyFloat } from "./python.ts";

/**
 * The instruction an OpenAI-compatible agent gets on DBBench: the same rules as AgentBench's
 * tool-calling prompt (explain, one SQL statement per call, commit only when sure, exact
 * answers, any answer for modifications), in our words. `--system-file` replaces it.
 */
export const DBBENCH_SYSTEM = [
  "I will ask you a question; answer it by operating a MySQL database with SQL.",
  "Explain the problem and your approach, then in every round use exactly one of the two tools.",
  "To run SQL, call `execute_sql` with one statement on one line; I run it and send you the raw MySQL output.",
  "When you are done, call `commit_final_answer` with your answers. Only commit when you are sure: the answer must be exactly the correct one.",
  "If the question asks you to modify the database, the answers you commit after the change can be anything.",
  "Always submit through the tools, never in the message text; a reply that uses no tool counts as a failed round.",
].join("\n");

export const dbbenchTools: ToolBinding[] = [
  {
    name: "execute_sql",
    action: "execute_sql",
    description: "Run one SQL statement on the MySQL database and return its raw output.",
    parameters: {
      type: "object",
      properties: { query: { type: "string", description: "one SQL statement" } },
      required: ["query"],
    },
  },
  {
    name: "commit_final_answer",
    action: "submit",
    description: "Commit the final answer; the episode ends.",
    parameters: {
      type: "object",
      properties: {
        answers: { type: "array", items: { type: ["string", "number"] }, description: "the answer values" },
      },
      required: ["answers"],
    },
  },
];

/** Tool-call arguments as Python reads them: a float literal keeps its Python text (`1.0`). */
export function parseArgumentsPy(raw: string): Record<string, unknown> {
  const fix = (v: unknown): unknown =>
    v instanceof PyFloatLiteral
      ? pyFloat(v.value)
      : Array.isArray(v)
        ? v.map(fix)
        : v && typeof v === "object"
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fix(x)]))
          : v;
  const parsed = fix(parseJsonPy(raw.trim() || "{}"));
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new Error("arguments are not a JSON object");
  return parsed as Record<string, unknown>;
}
