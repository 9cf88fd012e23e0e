import { z } from "zod";
import { ContextCorrection } from "./context-correction.ts";

/**
 * What a policy update is told besides its samples: declared once here, picked from the training
 * config by the trainer, and sent as is over the policy protocol.
 */
export const UpdateSettings = z.object({
  learningRate: z.number().positive(),
  clipEpsilon: z.number().positive(),
  klCoef: z.number().min(0),
  epochs: z.number().int().min(1),
  /** How rescued trajectories are scored: in the context that generated them, or in H0's. */
  rescueContext: z.enum(["as-generated", "base"]),
  /**
   * Under `rescueContext: "base"`, the importance correction for the change of context (see `CONTEXT_CORRECTIONS`);
   * absent: none.
   */
  rescueCorrection: ContextCorrection.optional(),
  /** Leave steps the harness intercepted (blocked, gated) out of the loss, like forced ones. */
  maskIntercepted: z.boolean(),
});
export type UpdateSettings = z.infer<typeof UpdateSettings>;
