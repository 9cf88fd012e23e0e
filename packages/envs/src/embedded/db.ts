import { cue, outcome, type FamilyModel } from "./family.ts";

/** Database tasks: schema inspection, answers that need normalising, mutations that need a commit. */
export const dbFamily: FamilyModel = {
  name: "db",
  tools: ["show_schema", "query", "mutate", "commit", "format_answer", "explain", "rollback", "submit"],
  toolRoles: {
    show_schema: "inspect",
    query: "act",
    mutate: "act",
    commit: "finalize",
    format_answer: "finalize",
    explain: "inspect",
    rollback: "act",
    submit: "finalize",
  },
  requirements: ["format", "mutation", "schema"],
  tagFor: { schema: "wide-table", mutation: "write", format: "report" },
  cuesFor: {
    schema: [cue("start", "show_schema", "Column names are not what they seem: inspect the schema.")],
    mutation: [cue("mutated", "commit", "Changes are only kept after a commit.")],
    format: [
      cue("result:raw", "format_answer", "Report numbers normalised (no separators, no units)."),
      cue("error:type-mismatch", "format_answer", "Normalise values before writing them."),
    ],
  },
  step(s, action) {
    const needsSchema = s.req.has("schema") && !s.facts.has("schema-known");
    switch (action) {
      case "show_schema":
        s.facts.add("schema-known");
        return "schema:shown";
      case "query":
        if (needsSchema) return "error:unknown-column";
        s.facts.add("queried");
        return s.req.has("format") ? "result:raw" : "result:ok";
      case "mutate":
        if (!s.req.has("mutation")) return "error:read-only";
        if (needsSchema) return "error:unknown-column";
        if (s.req.has("format") && !s.facts.has("formatted")) return "error:type-mismatch";
        s.facts.add("mutated");
        s.facts.delete("committed");
        return "mutated";
      case "commit":
        if (!s.facts.has("mutated")) return "commit:empty";
        s.facts.add("committed");
        return "committed";
      case "format_answer":
        if (!s.req.has("mutation") && !s.facts.has("queried")) return "error:no-result";
        s.facts.add("formatted");
        return "formatted";
      case "rollback":
        s.facts.delete("mutated");
        s.facts.delete("committed");
        return "rolled-back";
      default:
        return "plan:shown";
    }
  },
  grade(s, reason) {
    const tags: string[] = [];
    let ok: boolean;
    if (s.req.has("mutation")) {
      ok = s.facts.has("mutated") && s.facts.has("committed");
      if (!s.facts.has("mutated")) {
        if (s.req.has("schema") && !s.facts.has("schema-known")) tags.push("unknown-column");
        else tags.push(s.req.has("format") && !s.facts.has("formatted") ? "wrong-format" : "no-mutation");
      } else if (!s.facts.has("committed")) tags.push("uncommitted");
    } else {
      ok = s.facts.has("queried") && (!s.req.has("format") || s.facts.has("formatted"));
      if (!s.facts.has("queried"))
        tags.push(s.req.has("schema") && !s.facts.has("schema-known") ? "unknown-column" : "no-answer");
      else if (!ok) tags.push("wrong-format");
    }
    if (reason === "budget-exhausted") tags.push("budget-exhausted");
    return outcome(reason === "submitted" && ok, tags);
  },
};
