import { failedCallEvent, type EventObserver, type ObserverFactory } from "@harness-s/core/gateway";
import { SweSignals, runsTests } from "./signals.ts";

const STATE_FACTS = ["reproduced", "edited", "tests:ran-after-edit"];
const EXIT_CODE = /exit code:?\s*(-?\d+)\)?\s*$/i;
const MISSING = /no such file/i;
const NOT_FOUND = /does not occur|not found/i;
const AMBIGUOUS = /occurs \d+ times/i;

const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/**
 * A command's event from its printed output: by the exit code the agent printed (SWE-agent's and this project's "(exit
 * code N)"), else by a traceback.
 */
function runEvent(command: string, text: string): string {
  const code = EXIT_CODE.exec(text.trimEnd());
  const ok = code ? code[1] === "0" : !/Traceback|Error:/.test(text);
  if (runsTests(command)) return ok ? "tests:passed" : "tests:failed";
  return ok ? "run:ok" : "run:error";
}

/**
 * SWE-Gym's events and facts read from what an agent's `run`, `read`, `edit` and `write` printed,
 * as the gateway sees it: the names `SweGymEnvironment` gives, so the siblings' triggers and
 * gates (`tests:ran-after-edit`) work on an agent that runs its own sandbox. The gateway cannot
 * look into the sandbox: a `write` creates a file unless the episode read or edited that path
 * before. An edit retracts `tests:ran-after-edit` until the tests run again.
 *
 * @example
 * const observerFor = sweObserver({ testsBlocked: false });
 */
export function sweObserver(opts: { testsBlocked: boolean }): ObserverFactory {
  return (): EventObserver => {
    const signals = new SweSignals(opts.testsBlocked);
    const known = new Set<string>();
    const facts = () => {
      const now = signals.facts();
      return { facts: now, retract: STATE_FACTS.filter((f) => !now.includes(f)) };
    };
    return {
      observe(action, args, text) {
        const failed = failedCallEvent(action);
        if (failed) return { event: failed, facts: [] };
        const path = str(args?.path);
        const command = str(args?.command);
        if (action === "run" && command) {
          const tests = runsTests(command);
          if (tests && opts.testsBlocked) return { event: "tests:blocked", ...facts() };
          signals.ran(command, tests);
          return { event: runEvent(command, text), ...facts() };
        }
        if (action === "read" && path) {
          if (MISSING.test(text)) return { event: "read:missing", ...facts() };
          known.add(path);
          return { event: "read:ok", ...facts() };
        }
        if (action === "write" && path && str(args?.content) !== undefined) {
          signals.changed(path, str(args?.content)!, !known.has(path));
          known.add(path);
          return { event: "write:ok", ...facts() };
        }
        if (action === "edit" && path && str(args?.new) !== undefined) {
          if (MISSING.test(text)) return { event: "read:missing", ...facts() };
          if (NOT_FOUND.test(text)) return { event: "edit:not-found", ...facts() };
          signals.changed(path, str(args?.new)!, false);
          known.add(path);
          return { event: AMBIGUOUS.test(text) ? "edit:ambiguous" : "edit:ok", ...facts() };
        }
        return { event: "error:tool-call", facts: [] };
      },
    };
  };
}
