import type { Envelope } from "./envelope.ts";

/**
 * A producer's view of a queue: validated envelopes in, at-least-once delivery to a worker. A
 * message with a payer carries its key as the tenant (SQS fair queues: one key's backlog does not
 * hold back another key's messages); `delaySeconds` keeps the messages invisible that long first.
 */
export interface MessageQueue {
  send(messages: Envelope[], opts?: { delaySeconds?: number }): Promise<void>;
}
