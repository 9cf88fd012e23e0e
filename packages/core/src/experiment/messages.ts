import { z } from "zod";
import { registerMessage } from "../messaging/envelope.ts";

/** Run (or resume) one experiment; the coordinator claims it, so a redelivery is a no-op. */
export const ExperimentRequestedBody = z.object({ experimentId: z.string().min(1).max(200) });
export type ExperimentRequestedBody = z.infer<typeof ExperimentRequestedBody>;

declare module "../messaging/envelope.ts" {
  interface MessageBodies {
    "experiment.requested": ExperimentRequestedBody;
  }
}
registerMessage("experiment.requested", ExperimentRequestedBody, 200);
