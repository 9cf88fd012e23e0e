import type { DecisionStore } from "@harness-s/core/routing";
import type { RoutingDecision } from "@harness-s/core/voting";

export class MemoryDecisionStore implements DecisionStore {
  // Writing a decision is the hot path (every route), reading one back is rare: the record is kept
  // as given (the router never changes a decision it has stored) and copied when read.
  private readonly decisions = new Map<string, RoutingDecision>();

  async put(decision: RoutingDecision): Promise<void> {
    if (!this.decisions.has(decision.id)) this.decisions.set(decision.id, decision);
  }

  async get(id: string): Promise<RoutingDecision | undefined> {
    const d = this.decisions.get(id);
    return d && structuredClone(d);
  }
}
