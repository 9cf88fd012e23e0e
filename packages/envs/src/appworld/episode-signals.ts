/** What an AppWorld episode's code and outputs say about how the agent worked, read as it runs. */

const CALL = /apis\.(\w+)\.(\w+)\s*\(/g;
const READ_ONLY_APPS = new Set(["api_docs", "supervisor"]);
const isRead = (app: string, api: string) =>
  READ_ONLY_APPS.has(app) || api.startsWith("show_") || api.startsWith("search_") || api.startsWith("get_");

/** The app APIs a piece of code calls, as `app.api`. */
export function apiCalls(code: string): { app: string; api: string }[] {
  return [...code.matchAll(CALL)].map((m) => ({ app: m[1]!, api: m[2]! }));
}

/**
 * The running record of one episode: which calls ran, whether a change is still unverified,
 * whether the agent paged, logged in, read the docs first and completed the task.
 */
export class EpisodeSignals {
  private executions = 0;
  docsFirst = false;
  loggedIn = false;
  paged = false;
  listed = false;
  unauthorized = false;
  executionError = false;
  completed = false;
  /** A change (an API that is not a read) ran and no read ran after it. */
  unverifiedChange = false;
  verifiedBeforeComplete = true;

  /** Records one execution of `code` whose output was read as `event`. */
  record(code: string, event: string): void {
    const calls = apiCalls(code);
    if (this.executions++ === 0) this.docsFirst = calls.some((c) => c.app === "api_docs");
    if (event === "app:unauthorized") this.unauthorized = true;
    if (event.startsWith("exec:error")) this.executionError = true;
    if (code.includes("page_index")) this.paged = true;
    const ok = event === "exec:ok";
    for (const { app, api } of calls) {
      if (api === "login" && ok) this.loggedIn = true;
      if (api.startsWith("show_") && !READ_ONLY_APPS.has(app)) this.listed = true;
      if (api === "complete_task") {
        this.completed = true;
        this.verifiedBeforeComplete = !this.unverifiedChange;
      } else if (!isRead(app, api) && api !== "login") this.unverifiedChange = true;
      else if (ok && isRead(app, api) && !READ_ONLY_APPS.has(app)) this.unverifiedChange = false;
    }
  }

  /** Facts a harness can gate on: `logged-in`, and `state:verified` while no change is left unchecked. */
  facts(): string[] {
    return [...(this.loggedIn ? ["logged-in"] : []), ...(this.unverifiedChange ? [] : ["state:verified"])];
  }

  /** Failure tags of an episode that did not succeed. */
  failureTags(testsFailed: boolean): string[] {
    const tags: string[] = [];
    if (this.unauthorized) tags.push("unauthorized");
    if (this.unauthorized && !this.loggedIn) tags.push("login-missing");
    if (this.listed && !this.paged && testsFailed) tags.push("pagination-unread");
    if (this.executionError) tags.push("execution-error");
    if (!this.completed) tags.push("not-completed");
    if (testsFailed) tags.push("tests-failed");
    return tags;
  }

  behaviours(): Record<string, boolean> {
    return {
      "docs-first": this.docsFirst,
      paginated: this.paged,
      "verified-before-complete": this.completed && this.verifiedBeforeComplete,
    };
  }
}
