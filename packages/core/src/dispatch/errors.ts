import { CoreError } from "../errors.ts";

/**
 * A request was made against a policy version the policy is no longer (or not yet) at: an
 * update on a stale base, or a rollout asked for another version. `held` is the version the
 * policy is at, `wanted` the one the request was for; an endpoint's refusal that did not state
 * them leaves them undefined. The wire code of both policy protocols.
 */
export class StalePolicyVersionError extends CoreError {
  constructor(
    readonly held: number | undefined,
    readonly wanted: number | undefined,
    detail?: string,
  ) {
    super("STALE_POLICY_VERSION", detail ?? `update based on policy version ${wanted}, current is ${held}`);
  }
}

/** A rollout asked for a version the endpoint's policy is not at (same code as a stale update). */
export function policyVersionMismatch(policyId: string, requested: number, held: number): StalePolicyVersionError {
  return new StalePolicyVersionError(
    held,
    requested,
    `policy ${policyId} is at version ${held}, the rollout asked for ${requested}`,
  );
}
