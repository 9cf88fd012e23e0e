import { failedCallEvent, type EventObserver, type ObserverFactory } from "@harness-s/core/gateway";
import { executionEvent } from "./environment.ts";
import { EpisodeSignals } from "./episode-signals.ts";

const STATE_FACTS = ["logged-in", "state:verified"];

/**
 * AppWorld's events and facts read from what an agent's `execute` printed, as the gateway sees
 * it: the same events and facts `AppWorldEnvironment` gives from the server's own output, so the
 * siblings' triggers (re-login on `app:unauthorized`) and gate (`state:verified`) work on an
 * agent that runs AppWorld itself. A change retracts `state:verified` until a read follows it.
 *
 * @example
 * const observerFor = appworldObserver;
 */
export const appworldObserver: ObserverFactory = (): EventObserver => {
  const signals = new EpisodeSignals();
  return {
    observe(action, args, text) {
      const failed = failedCallEvent(action);
      if (failed) return { event: failed, facts: [] };
      if (action !== "execute" || typeof args?.code !== "string") return { event: "error:tool-call", facts: [] };
      const event = executionEvent(text);
      signals.record(args.code, event);
      const facts = signals.facts();
      return { event, facts, retract: STATE_FACTS.filter((f) => !facts.includes(f)) };
    },
  };
};
