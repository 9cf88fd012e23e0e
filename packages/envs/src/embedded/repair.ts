import { cue, outcome, type EpisodeState, type FamilyModel } from "./family.ts";

/** A test run or an assertion check: passes once the right edit is in, else shows the failure. */
function verify(s: EpisodeState, kind: "tests" | "assert"): string {
  s.facts.add("verified");
  if (!s.facts.has("edited")) return `${kind}:fail`;
  if (s.flags.has("correct")) {
    s.facts.add("tests-pass");
    return `${kind}:pass`;
  }
  s.flags.add("saw-failure");
  return `${kind}:fail`;
}

/**
 * Repository repair: locate the file, edit, verify. A "tricky" bug needs a second edit informed
 * by a failing check of the first edit; with the test runner blocked, only assertions written by
 * the agent (the assertion fallback) can show the failure.
 */
export const repairFamily: FamilyModel = {
  name: "repair",
  tools: ["search", "read_file", "edit_file", "run_tests", "write_assertions", "revert", "list_dir", "submit"],
  toolRoles: {
    search: "inspect",
    read_file: "inspect",
    edit_file: "act",
    run_tests: "verify",
    write_assertions: "verify",
    revert: "act",
    list_dir: "inspect",
    submit: "finalize",
  },
  requirements: ["tricky", "blocked", "locate"],
  tagFor: { tricky: "regression", blocked: "ci-offline", locate: "monorepo" },
  cuesFor: {
    tricky: [
      cue("edited", "run_tests", "Run the tests after every edit."),
      cue("tests:fail", "edit_file", "Fix what the failing test shows."),
      cue("assert:fail", "edit_file", "Fix what the failing assertion shows."),
    ],
    blocked: [cue("tests:blocked", "write_assertions", "If the test runner is unavailable, check with assertions.")],
    locate: [cue("start", "search", "Several modules share this name: search before opening files.")],
  },
  step(s, action) {
    switch (action) {
      case "search":
        s.facts.add("located");
        return "search:hit";
      case "read_file":
        if (s.req.has("locate") && !s.facts.has("located")) return "error:ambiguous-target";
        s.facts.add("read");
        return "file:read";
      case "edit_file": {
        if (!s.facts.has("read")) return "error:not-read";
        const correct = !s.req.has("tricky") || s.flags.has("saw-failure");
        s.facts.add("edited");
        s.facts.delete("verified");
        s.facts.delete("tests-pass");
        s.flags.delete("saw-failure");
        if (correct) s.flags.add("correct");
        else s.flags.delete("correct");
        return "edited";
      }
      case "run_tests":
        if (s.req.has("blocked")) {
          s.flags.add("saw-blocked");
          return "tests:blocked";
        }
        return verify(s, "tests");
      case "write_assertions":
        s.flags.add("asserted");
        return verify(s, "assert");
      case "revert":
        s.facts.delete("edited");
        s.flags.delete("correct");
        return "reverted";
      default:
        return "dir:listed";
    }
  },
  grade(s, reason) {
    const edited = s.facts.has("edited");
    const tags: string[] = [];
    if (!edited) tags.push(s.req.has("locate") && !s.facts.has("read") ? "ambiguous-target" : "no-edit");
    else if (s.facts.has("verified")) tags.push("tests-failing");
    else tags.push(s.req.has("blocked") ? "tests-blocked" : "unverified-submit");
    if (reason === "budget-exhausted") tags.push("budget-exhausted");
    const behaviours: Record<string, boolean> = {};
    if (reason === "submitted" && edited) behaviours["verify-before-submit"] = s.facts.has("verified");
    if (s.flags.has("saw-blocked")) behaviours["assertion-fallback"] = s.flags.has("asserted");
    return outcome(reason === "submitted" && edited && s.flags.has("correct"), tags, behaviours);
  },
};
