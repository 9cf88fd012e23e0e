import { parseHarnessSpec, type HarnessSpec } from "@harness-s/core";

/** H0: a plain tool loop over the checkout (run, read, edit, write, submit), 15 rounds. */
export const sweH0: HarnessSpec = parseHarnessSpec({
  id: "swe-h0",
  description: "SWE-Gym's plain setting: shell commands and file edits in the checkout, then submit",
  budget: { maxTurns: 15 },
  provenance: { direction: "base" },
});

const sibling = (id: string, direction: string, hypothesis: string, edit: Record<string, unknown>) =>
  parseHarnessSpec({ id, budget: { maxTurns: 15 }, ...edit, provenance: { direction, parent: sweH0.id, hypothesis } });

/**
 * SWE siblings of H0, one edit each along one repair direction: reproduce before editing, run the
 * related tests before submitting, a note when an edit matched more than one place, and a note
 * when the tests are blocked that asks for a fix of the code rather than tests of one's own.
 */
export const sweSiblings: HarnessSpec[] = [
  sibling(
    "swe-reproduce-first",
    "pre-action",
    "agents edit before they have seen the bug; warn before an edit that no reproduction preceded",
    {
      preAction: [
        { action: "edit", requires: ["reproduced"], mode: "warn", hint: "run" },
        { action: "write", requires: ["reproduced"], mode: "warn", hint: "run" },
      ],
      instruction: {
        systemAppend:
          "First reproduce the problem with a short python command that shows the wrong behaviour; then fix the code.",
      },
    },
  ),
  sibling(
    "swe-related-tests",
    "verification",
    "agents submit an edit no test has exercised; hold submit until tests ran after the last edit",
    {
      commitGate: { requires: ["tests:ran-after-edit"], hint: "run", maxBlocks: 1 },
      postObservation: [
        {
          on: "gate:*",
          hint: "run",
          text: "Run the tests related to your change (python -m pytest <test file>) before you submit.",
          maxFires: 1,
        },
      ],
    },
  ),
  sibling(
    "swe-unique-edit",
    "recovery",
    "agents' edits match more than one place and change the wrong one; say so and ask for a longer old text",
    {
      postObservation: [
        {
          on: "edit:ambiguous",
          hint: "read",
          text: "Your old text occurs more than once and only the first occurrence changed: read the file, and if that was the wrong place, undo it and edit again with more surrounding lines so the old text is unique.",
          maxFires: 2,
        },
      ],
    },
  ),
  sibling(
    "swe-blocked-tests-note",
    "recovery",
    "with tests blocked, agents edit tests or write their own assertions; ask for a fix of the code instead",
    {
      postObservation: [
        {
          on: "tests:blocked",
          hint: "read",
          text: "The tests cannot run here. Do not edit test files and do not write assertions of your own: read the code the problem statement names, fix it there, and check the fix with a short python command that prints the result.",
          maxFires: 2,
        },
      ],
    },
  ),
];

export const sweHarnesses = [sweH0, ...sweSiblings];
