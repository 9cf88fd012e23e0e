import { z } from "zod";
import { CorrelationId, currentCorrelationId } from "../observability/correlation.ts";

/**
 * Every queue message is an envelope with a schema version, a type and an id that makes
 * processing idempotent (a redelivered message has the same id). Messaging knows no message of
 * its own: the context that owns a message declares its body here by type (a declaration merged
 * into {@link MessageBodies}) and registers its schema ({@link registerMessage}) beside it, so
 * contexts send messages without messaging depending on any of them.
 */
// biome-ignore lint/suspicious/noEmptyInterface: each context that owns a message merges its body into it
export interface MessageBodies {}

/** Who pays for what a message costs to process: the key, and the job it is part of. */
export const Payer = z
  .object({ keyId: z.string().min(1).max(200), jobId: z.string().min(1).max(400).optional() })
  .strict();
export type Payer = z.infer<typeof Payer>;

/**
 * How often one message may be put back to wait its turn (a key at its cap of rollouts running) before it is failed.
 */
export const MAX_DEFERRALS = 1_000;

const head = (idMax: number) => ({
  v: z.literal(1),
  id: z.string().min(1).max(idMax),
  payer: Payer.optional(),
  /** Times a worker put this message back to wait its turn (see `CALLER_ROLLOUT_FAIRNESS`). */
  deferrals: z.number().int().min(1).max(MAX_DEFERRALS).optional(),
  /**
   * The request this message was sent on behalf of (its API log line's id); absent on messages sent before it existed.
   */
  correlationId: CorrelationId.optional(),
});

export type EnvelopeType = keyof MessageBodies & string;
/** One message of type `T`: the head every message has, and that type's body. */
export type EnvelopeOf<T extends EnvelopeType> = {
  v: 1;
  id: string;
  type: T;
  body: MessageBodies[T];
  payer?: Payer | undefined;
  deferrals?: number | undefined;
  correlationId?: string | undefined;
};
export type Envelope = { [T in EnvelopeType]: EnvelopeOf<T> }[EnvelopeType];

const SCHEMAS = new Map<string, z.ZodType>();

/**
 * Registers message type `type`: its body's schema and the longest id its messages take. Called
 * once, where the body is declared (its context's module), so any process that can make or
 * handle such a message can read one.
 */
export function registerMessage<T extends EnvelopeType>(
  type: T,
  body: z.ZodType<MessageBodies[T], unknown>,
  idMax: number,
): void {
  SCHEMAS.set(type, z.object({ ...head(idMax), type: z.literal(type), body }));
}

/**
 * The envelope of every registered message, read by its `type`: an unknown type is refused
 * naming those this process reads; a known one by its head and its body's schema.
 */
export const Envelope = {
  safeParse(
    input: unknown,
  ): { success: true; data: Envelope; error?: undefined } | { success: false; data?: undefined; error: z.ZodError } {
    const type = input !== null && typeof input === "object" ? (input as { type?: unknown }).type : undefined;
    const schema = typeof type === "string" ? SCHEMAS.get(type) : undefined;
    if (!schema)
      return {
        success: false,
        error: new z.ZodError([
          {
            code: "custom",
            path: ["type"],
            input: type,
            message: `not a message type this worker reads (${[...SCHEMAS.keys()].sort().join(", ")})`,
          },
        ]),
      };
    const parsed = schema.safeParse(input);
    return parsed.success ? { success: true, data: parsed.data as Envelope } : { success: false, error: parsed.error };
  },
  parse(input: unknown): Envelope {
    const parsed = Envelope.safeParse(input);
    if (!parsed.success) throw parsed.error;
    return parsed.data;
  },
};

/**
 * The one way to make a queue message: the current schema version, its type, its idempotency id,
 * who pays for processing it (the workers meter what it cost to that key and job), and the
 * correlation id of the work it is made in (`withCorrelationId`: an API request, a worker's record).
 *
 * @example
 * await queue.send([envelope("experiment.requested", `experiment:${id}`, { experimentId: id })]);
 */
export function envelope<T extends EnvelopeType>(
  type: T,
  id: string,
  body: EnvelopeOf<T>["body"],
  payer?: Payer,
): EnvelopeOf<T> {
  const correlationId = currentCorrelationId();
  return {
    v: 1,
    id,
    type,
    body,
    ...(payer ? { payer } : {}),
    ...(correlationId ? { correlationId } : {}),
  } as EnvelopeOf<T>;
}
