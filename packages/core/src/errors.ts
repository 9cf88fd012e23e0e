import type { z } from "zod";

/** Base class of every domain error: a stable `code` for callers and HTTP mapping, and a `cause`. */
export class HarnessSError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A harness spec, pool or config failed validation; `issues` lists readable problems. */
export class ValidationError extends HarnessSError {
  constructor(
    what: string,
    readonly issues: string[],
    options?: { cause?: unknown },
  ) {
    super("VALIDATION_FAILED", `${what} is invalid:\n  - ${issues.join("\n  - ")}`, options);
  }
}

/** Too few voters answered for a routing decision to count. */
export class QuorumError extends HarnessSError {
  constructor(
    readonly answered: number,
    readonly required: number,
    readonly failures: { voterId: string; reason: string }[],
  ) {
    super(
      "QUORUM_NOT_MET",
      `only ${answered} of the required ${required} voters answered (${failures
        .map((f) => `${f.voterId}: ${f.reason}`)
        .join("; ")})`,
    );
  }
}

/** A voter did not answer in time. */
export class VoterTimeoutError extends HarnessSError {
  constructor(voterId: string, ms: number) {
    super("VOTER_TIMEOUT", `voter ${voterId} did not answer within ${ms} ms`);
  }
}

/** A ballot referred to harnesses that were not candidates, or was otherwise malformed. */
export class InvalidBallotError extends HarnessSError {
  constructor(voterId: string, detail: string, options?: { cause?: unknown }) {
    super("INVALID_BALLOT", `voter ${voterId} returned an invalid ballot: ${detail}`, options);
  }
}

/** An update was based on a policy version that is no longer current. */
export class StalePolicyVersionError extends HarnessSError {
  constructor(expected: number, actual: number, detail?: string) {
    super("STALE_POLICY_VERSION", detail ?? `update based on policy version ${actual}, current is ${expected}`);
  }
}

/** A referenced entity (harness, task, pool) does not exist. */
export class NotFoundError extends HarnessSError {
  constructor(kind: string, id: string) {
    super("NOT_FOUND", `${kind} ${JSON.stringify(id)} not found`);
  }
}

/** A rollout budget would be exceeded. */
export class BudgetExceededError extends HarnessSError {
  constructor(detail: string) {
    super("BUDGET_EXCEEDED", detail);
  }
}

/** Formats zod issues as `path: message` lines. */
export function formatIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string[] {
  return issues.map((i) => `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`);
}

/**
 * `schema` applied to `input`, or a {@link ValidationError} naming `what` with every issue.
 *
 * @example
 * const train = parseOrThrow(TrainConfig, body.train, "train");
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new ValidationError(what, formatIssues(parsed.error.issues));
  return parsed.data;
}
