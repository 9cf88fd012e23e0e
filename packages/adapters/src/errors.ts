import { ConflictError, HarnessSError, StoreUnavailableError } from "@harness-s/core";

/** Turns an AWS SDK error into a domain error; domain errors pass through. */
export function translateAwsError(err: unknown, what: string): HarnessSError {
  if (err instanceof HarnessSError) return err;
  const name = (err as { name?: string })?.name ?? "Error";
  if (name === "ConditionalCheckFailedException" || name === "TransactionCanceledException") {
    return new ConflictError(`${what}: a conflicting write exists`);
  }
  return new StoreUnavailableError(`${what} failed (${name})`, { cause: err });
}

/** Runs an SDK call, translating its errors. */
export async function aws<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw translateAwsError(err, what);
  }
}
