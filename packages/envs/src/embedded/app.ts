import { cue, outcome, type FamilyModel } from "./family.ts";

/** App/API tasks: authentication, a parameter contract in the docs, and pagination. */
export const appFamily: FamilyModel = {
  name: "app",
  tools: ["login", "read_docs", "list_items", "next_page", "get_item", "search", "refresh", "submit"],
  toolRoles: {
    login: "inspect",
    read_docs: "inspect",
    list_items: "act",
    next_page: "navigate",
    get_item: "inspect",
    search: "inspect",
    refresh: "act",
    submit: "finalize",
  },
  requirements: ["docs", "auth", "pages"],
  tagFor: { auth: "account", pages: "bulk", docs: "v2-api" },
  cuesFor: {
    auth: [cue("start", "login", "This API needs a session: log in first.")],
    pages: [cue("page:more", "next_page", "Results are paginated: fetch every page.")],
    docs: [cue("start", "read_docs", "The filter syntax is described in the API docs.")],
  },
  step(s, action) {
    switch (action) {
      case "login":
        s.facts.add("authed");
        return "auth:ok";
      case "read_docs":
        s.facts.add("docs-read");
        return "docs:read";
      case "list_items":
        if (s.req.has("auth") && !s.facts.has("authed")) return "error:401";
        if (s.req.has("docs") && !s.facts.has("docs-read")) return "error:400";
        s.facts.add("listed");
        s.n.pages = 1;
        return Number(s.params.pages) > 1 ? "page:more" : "page:last";
      case "next_page":
        if (!s.n.pages) return "error:no-cursor";
        if (s.n.pages >= Number(s.params.pages)) return "page:none";
        s.n.pages++;
        return s.n.pages < Number(s.params.pages) ? "page:more" : "page:last";
      case "refresh":
        s.n.pages = 0;
        s.facts.delete("listed");
        return "refreshed";
      case "get_item":
        return "item:ok";
      default:
        return "search:results";
    }
  },
  grade(s, reason) {
    const fetched = s.n.pages ?? 0;
    const tags: string[] = [];
    if (fetched === 0) {
      if (s.req.has("auth") && !s.facts.has("authed")) tags.push("unauthorized");
      else if (s.req.has("docs") && !s.facts.has("docs-read")) tags.push("bad-argument");
      else tags.push("no-results");
    } else if (fetched < Number(s.params.pages)) tags.push("incomplete-results");
    if (reason === "budget-exhausted") tags.push("budget-exhausted");
    return outcome(reason === "submitted" && fetched === Number(s.params.pages), tags);
  },
};
