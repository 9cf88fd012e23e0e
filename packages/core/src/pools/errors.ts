import { CoreError } from "../errors.ts";

/** A pool evolution found no sibling worth keeping, or its worker was lost on every attempt. */
export class EvolutionFailedError extends CoreError {
  constructor(message: string) {
    super("EVOLUTION_FAILED", message);
  }
}
