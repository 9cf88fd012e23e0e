import type { RoutingDecision } from "../voting/router.ts";

/** Every routing decision, for audit. Writing the same id twice keeps the first. */
export interface DecisionStore {
  put(decision: RoutingDecision): Promise<void>;
  get(id: string): Promise<RoutingDecision | undefined>;
}
