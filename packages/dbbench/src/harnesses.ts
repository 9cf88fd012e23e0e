import { parseHarnessSpec, type HarnessSpec } from "@harness-s/core";

/** H0: AgentBench's plain setting (its prompt, its two tools, 15 rounds). */
export const dbbenchH0: HarnessSpec = parseHarnessSpec({
  id: "dbbench-h0",
  description: "AgentBench's plain DBBench setting",
  budget: { maxTurns: 15 },
  provenance: { direction: "base" },
});

const sibling = (id: string, direction: string, hypothesis: string, edit: Record<string, unknown>) =>
  parseHarnessSpec({
    id,
    budget: { maxTurns: 15 },
    ...edit,
    provenance: { direction, parent: dbbenchH0.id, hypothesis },
  });

/**
 * DBBench siblings of H0, each one edit along one repair direction. Each changes what the agent
 * sees in the way its spec says (tested): a schema preview in the first observation, an
 * explanation after each kind of SQL error, a commit gate on the answer's form, answer
 * normalisation hints in the instruction, a budget warning before the last rounds, and a nudge
 * to check a mutation before committing.
 */
export const dbbenchSiblings: HarnessSpec[] = [
  sibling(
    "dbbench-schema-preview",
    "recon",
    "agents guess column names; show the table's columns and first rows up front",
    { recon: { preview: ["schema"] } },
  ),
  sibling("dbbench-explained-errors", "recovery", "agents repeat malformed SQL; explain each error class", {
    postObservation: [
      {
        on: "sql:error:syntax",
        hint: "execute_sql",
        text: "That was a MySQL syntax error. Quote table and column names containing spaces or punctuation with backticks (`Name of table`), strings with single quotes, and send exactly one statement per call.",
        maxFires: 3,
      },
      {
        on: "sql:error:unknown-column",
        hint: "execute_sql",
        text: "A column name is wrong. Column names are case- and space-sensitive: list them with SHOW COLUMNS FROM `table` and copy them exactly, in backticks.",
        maxFires: 3,
      },
      {
        on: "sql:error:unknown-table",
        hint: "execute_sql",
        text: "The table name is wrong. The table name is the one given in the question; put it in backticks exactly as written (SHOW TABLES lists it).",
        maxFires: 3,
      },
    ],
  }),
  sibling(
    "dbbench-answer-gate",
    "contract",
    "agents commit SQL or prose as the answer; refuse an answer that is not a list of values",
    {
      commitGate: { requires: ["answer:well-formed"], hint: "submit", maxBlocks: 1 },
      postObservation: [
        {
          on: "gate:*",
          hint: "submit",
          text: 'Commit only the answer values as a list, e.g. {"answers": ["42"]} or {"answers": ["A", "B"]}: no SQL, no sentence, no empty list.',
          maxFires: 2,
        },
      ],
    },
  ),
  sibling(
    "dbbench-normalisation-hints",
    "contract",
    "agents format values so they no longer match; state how answers are compared",
    {
      instruction: {
        systemAppend:
          "How answers are compared: each value is compared as text after removing surrounding quotes, a trailing %, and thousands separators; numbers match within 0.01; several values match as a set, in any order. Commit the values exactly as the database returns them, one list item per value.",
      },
    },
  ),
  sibling(
    "dbbench-budget-monitor",
    "budget",
    "agents run out of rounds without committing; warn before the last rounds",
    {
      budget: {
        maxTurns: 15,
        warnAt: 3,
        warnText: "Only {left} rounds left: commit your final answer with commit_final_answer now.",
      },
    },
  ),
  sibling(
    "dbbench-verify-mutation",
    "verification",
    "agents commit a mutation without checking it; suggest a SELECT after a successful change",
    {
      postObservation: [
        {
          on: "sql:ok",
          hint: "execute_sql",
          text: "The statement changed the table. Check the affected rows with a SELECT before you commit.",
          maxFires: 1,
        },
      ],
    },
  ),
];

export const dbbenchHarnesses = [dbbenchH0, ...dbbenchSiblings];
