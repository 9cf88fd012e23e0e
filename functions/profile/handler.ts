import { Envelope, applyEvidence, type ProfileLedger } from "@harness-s/core";
import { SqsEvent, type SqsBatchResponse } from "@harness-s/adapters";

/**
 * The `profile` worker: applies reported outcomes to behaviour profiles. Each record is parsed
 * (JSON, then the versioned envelope); a record that fails to parse or to apply is reported as a
 * batch item failure, so SQS retries it and moves it to the DLQ at maxReceiveCount. Applying is
 * idempotent per envelope id, so redeliveries change nothing.
 *
 * @example
 * export const handler = createProfileHandler({ ledger: new DynamoProfileStore(doc, tables) });
 */
export function createProfileHandler(deps: { ledger: ProfileLedger; log?: (line: string) => void }) {
  const log = deps.log ?? ((line: string) => console.warn(line));
  return async (raw: unknown): Promise<SqsBatchResponse> => {
    const event = SqsEvent.parse(raw);
    const batchItemFailures: { itemIdentifier: string }[] = [];
    for (const record of event.Records) {
      try {
        const envelope = Envelope.parse(JSON.parse(record.body));
        if (envelope.type !== "profile.evidence") throw new Error(`a ${envelope.type} message does not belong on the profile queue`);
        await applyEvidence(envelope.id, envelope.body, deps.ledger);
      } catch (err) {
        log(`profile: message ${record.messageId} failed (receive ${record.attributes.ApproximateReceiveCount}): ${err instanceof Error ? err.message : String(err)}`);
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}
