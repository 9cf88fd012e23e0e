import { Envelope, runRequestedRollout, type PoolStore, type RolloutRunner, type RolloutStore, type TaskSource } from "@harness-s/core";
import { SqsEvent, type SqsBatchResponse } from "@harness-s/adapters";

/**
 * The `dispatch` worker: runs one requested rollout against the policy and stores it once per
 * (job, index). Failures are reported per record (retry, then DLQ); redeliveries are no-ops.
 *
 * @example
 * const handler = createDispatchHandler({ pools, tasks, rollouts, runRollout });
 */
export function createDispatchHandler(deps: {
  pools: PoolStore;
  tasks: TaskSource;
  rollouts: RolloutStore;
  runRollout: RolloutRunner;
  log?: (line: string) => void;
}) {
  const log = deps.log ?? ((line: string) => console.warn(line));
  return async (raw: unknown): Promise<SqsBatchResponse> => {
    const event = SqsEvent.parse(raw);
    const batchItemFailures: { itemIdentifier: string }[] = [];
    for (const record of event.Records) {
      try {
        const envelope = Envelope.parse(JSON.parse(record.body));
        if (envelope.type !== "rollout.requested") throw new Error(`a ${envelope.type} message does not belong on the dispatch queue`);
        await runRequestedRollout(envelope.body, deps);
      } catch (err) {
        log(`dispatch: message ${record.messageId} failed (receive ${record.attributes.ApproximateReceiveCount}): ${err instanceof Error ? err.message : String(err)}`);
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}
