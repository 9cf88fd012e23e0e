import { z } from "zod";
import { registerMessage } from "../messaging/envelope.ts";

/** Run one pool evolution (`POST /v1/pools` with `evolve`); the coordinator claims it, so a redelivery is a no-op. */
export const PoolEvolveRequestedBody = z.object({ evolutionId: z.string().min(1).max(200) });
export type PoolEvolveRequestedBody = z.infer<typeof PoolEvolveRequestedBody>;

declare module "../messaging/envelope.ts" {
  interface MessageBodies {
    "pool.evolve.requested": PoolEvolveRequestedBody;
  }
}
registerMessage("pool.evolve.requested", PoolEvolveRequestedBody, 200);
