import { afterEach, describe, expect, it, vi } from "vitest";
import { ValidationError } from "@harness-s/core";
import type { Envelope } from "@harness-s/core/messaging";
import type { SqsEvent } from "@harness-s/adapters/sqs";
import { EventSourceQueue } from "../../packages/cli/src/commands/bench-rescue-memory.ts";
import { WORKERS } from "../../infra/settings.ts";

const message = (id: string): Envelope => ({ v: 1, id, type: "experiment.requested", body: { experimentId: id } });

/** A queue whose handler records each delivery (envelope id and receive) and fails the ids in `failing` every time. */
function recordingQueue(failing: ReadonlySet<string> = new Set()) {
  const queue = new EventSourceQueue();
  const deliveries: [string, number][] = [];
  queue.handler = (async (event: SqsEvent) => {
    const failed = [];
    for (const r of event.Records) {
      const id = (JSON.parse(r.body) as Envelope).id;
      deliveries.push([id, Number(r.attributes.ApproximateReceiveCount)]);
      if (failing.has(id)) failed.push({ itemIdentifier: r.messageId });
    }
    return { batchItemFailures: failed };
  }) as never;
  return { queue, deliveries };
}

afterEach(() => vi.useRealTimers());

// The memory stack of the rescue bench (its in-memory rows) feeds the dispatch handler as Lambda's
// event source would: a send is one batch, after its delay; a failed record comes back on its next
// receive until the queue's last (the handler's to record); an invalid message is refused.
describe("bench's in-memory event source", () => {
  it("hands a send to the handler as one batch, and a record it fails again on its next receive, up to the queue's receives", async () => {
    const { queue, deliveries } = recordingQueue(new Set(["b"]));
    await queue.send([message("a"), message("b")]);
    await queue.drained();
    expect(deliveries).toEqual([
      ["a", 1],
      ["b", 1],
      ...Array.from({ length: WORKERS.dispatch.retry - 1 }, (_, i): [string, number] => ["b", i + 2]),
    ]);
  });

  it("delivers a delayed send only after its delay", async () => {
    vi.useFakeTimers();
    const { queue, deliveries } = recordingQueue();
    await queue.send([message("later")], { delaySeconds: 5 });
    await vi.advanceTimersByTimeAsync(4_900);
    expect(deliveries).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(deliveries).toEqual([["later", 1]]);
  });

  it("refuses an invalid message, delivering none of its send", async () => {
    const { queue, deliveries } = recordingQueue();
    await expect(
      queue.send([message("ok"), { ...message("bad"), type: "nope" } as unknown as Envelope]),
    ).rejects.toBeInstanceOf(ValidationError);
    await queue.drained();
    expect(deliveries).toEqual([]);
  });
});
