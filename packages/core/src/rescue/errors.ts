import { CoreError } from "../errors.ts";

/** A rescue would take a key past its rescue slots in flight (429, as for experiments). */
export class RescueSlotsError extends CoreError {
  constructor(
    readonly limit: number,
    readonly asked: number,
  ) {
    super(
      "CONCURRENCY_LIMIT",
      `this rescue's ${asked} rollouts would take this key past its ${limit} rescue rollouts in flight; wait for a rescue to end or cancel one`,
    );
  }
}
