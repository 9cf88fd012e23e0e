import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { z } from "zod";
import { MetricRegistry, type EventLogger, type LogEvent, type MetricsSource } from "@harness-s/core/observability";

/** Rescues whose slots are followed at once (the oldest is forgotten past it: a rescue never seen to end). */
export const RESCUE_TALLY_LIMIT = 10_000;

/** How long a scrape waits for a policy worker's `/healthz` (a worker that does not answer reads as down). */
export const WORKER_HEALTH_TIMEOUT_MS = 2_000;

/** What a scrape reads of a policy worker's `/healthz`: every token its sampler drew since it started. */
const WorkerHealth = z.object({ sampler: z.object({ tokens: z.number().int().nonnegative() }) });

/** A queue's depth in each of its states, as GetQueueAttributes names them. */
const DEPTH_ATTRIBUTES = {
  visible: "ApproximateNumberOfMessages",
  in_flight: "ApproximateNumberOfMessagesNotVisible",
  delayed: "ApproximateNumberOfMessagesDelayed",
} as const;

/** How a rescue ended, from its slots' outcomes: all stored (done), one cancelled, or one failed. */
function rescueOutcome(slots: Iterable<string>): "done" | "failed" | "cancelled" {
  const seen = new Set(slots);
  return seen.has("cancelled") ? "cancelled" : seen.has("failed") || seen.has("over-budget") ? "failed" : "done";
}

/**
 * A slot's end as a rescue counts it (a duplicate: stored by an earlier delivery); undefined while it may still run.
 */
function slotEnd(e: LogEvent): string | undefined {
  if (e.outcome === "duplicate" || e.outcome === "stored") return "stored";
  if (e.outcome === "failed" || e.outcome === "over-budget" || e.outcome === "cancelled") return e.outcome;
  return e.gaveUp === true ? "failed" : undefined;
}

/** Forgets the oldest entries of a set or map past {@link RESCUE_TALLY_LIMIT}. */
function bounded(entries: Set<string> | Map<string, unknown>): void {
  for (const oldest of entries.keys()) {
    if (entries.size <= RESCUE_TALLY_LIMIT) return;
    entries.delete(oldest);
  }
}

/**
 * Serve's metrics, folded from the same events the JSON lines carry (the API's `http.request`, the
 * workers' `queue.record`), and at each scrape the queues' depths read from the queue server and
 * each served model's policy worker's tokens sampled from its `/healthz` (their rate is its tokens/s).
 */
export class ServeMetrics implements EventLogger, MetricsSource {
  private readonly registry = new MetricRegistry();
  private readonly requests = this.registry.counter(
    "harness_s_http_requests_total",
    "API requests answered, by route pattern, method and status",
    ["route", "method", "status"],
  );
  private readonly latency = this.registry.histogram(
    "harness_s_http_request_duration_seconds",
    "API request latency in seconds, by route pattern",
    ["route"],
  );
  private readonly records = this.registry.counter(
    "harness_s_queue_records_total",
    "Queue messages a worker processed, by function and outcome",
    ["function", "outcome"],
  );
  private readonly rollouts = this.registry.counter(
    "harness_s_rollouts_stored_total",
    "Rollouts the dispatch worker stored (rescues' and experiments')",
  );
  private readonly rescuesStarted = this.registry.counter(
    "harness_s_rescues_started_total",
    "Rescues started (POST /v1/rescues answered 202)",
  );
  private readonly rescuesFinished = this.registry.counter(
    "harness_s_rescues_finished_total",
    "Rescues whose every slot the dispatch worker saw end, by outcome (done: all stored; failed: one failed or over budget; cancelled)",
    ["outcome"],
  );
  private readonly tokens = this.registry.counter(
    "harness_s_policy_tokens_sampled_total",
    "Tokens each served model's policy worker sampled (rate(): its tokens/s)",
    ["model"],
  );
  private readonly workerUp = this.registry.gauge(
    "harness_s_policy_worker_up",
    "Whether each served model's policy worker answered its /healthz at this scrape (1) or not (0)",
    ["model"],
  );
  /**
   * Each worker's token count at the last scrape (the counter moves by what it drew since; a restarted worker counts
   * from zero again).
   */
  private readonly tokensSeen = new Map<string, number>();
  private readonly depth = this.registry.gauge(
    "harness_s_queue_messages",
    "Messages on each queue and its DLQ now, by state (visible, in_flight, delayed)",
    ["queue", "state"],
  );
  /** Each followed rescue's slots (once its job was read) and how each of its slots ended so far. */
  private readonly rescues = new Map<string, { slots?: number; ended: Map<number, string> }>();
  /** Rescues counted finished (a redelivered slot of one is not counted again), the oldest forgotten past the limit. */
  private readonly finished = new Set<string>();

  constructor(
    private readonly sqs: SQSClient,
    private readonly queues: readonly { name: string; url: string }[],
    private readonly workers: readonly { name: string; url: string }[] = [],
  ) {}

  event(e: LogEvent): void {
    if (e.event === "http.request") this.request(e);
    else if (e.event === "queue.record") this.record(e);
  }

  private request(e: LogEvent): void {
    const route = String(e.route ?? "unmatched");
    this.requests.inc({ route, method: String(e.method), status: String(e.status) });
    if (typeof e.ms === "number") this.latency.observe({ route }, e.ms / 1000);
    if (route === "/v1/rescues" && e.method === "POST" && e.status === 202) this.rescuesStarted.inc();
  }

  private record(e: LogEvent): void {
    this.records.inc({ function: String(e.function), outcome: String(e.outcome) });
    if (e.function !== "dispatch") return;
    if (e.outcome === "stored") this.rollouts.inc();
    this.followRescue(e);
  }

  /** A rescue's slot ended: once all its slots have, it is counted finished with its outcome. */
  private followRescue(e: LogEvent): void {
    const jobId = e.jobId;
    const end = slotEnd(e);
    if (typeof jobId !== "string" || typeof e.slot !== "number" || this.finished.has(jobId)) return;
    if (typeof e.rescueSlots !== "number" && !this.rescues.has(jobId)) return;
    const tally = this.rescues.get(jobId) ?? { ended: new Map<number, string>() };
    if (typeof e.rescueSlots === "number") tally.slots = e.rescueSlots;
    if (end && !tally.ended.has(e.slot)) tally.ended.set(e.slot, end);
    this.rescues.delete(jobId); // re-inserted last: the oldest rescue is the first one forgotten
    if (tally.slots !== undefined && tally.ended.size >= tally.slots) {
      this.rescuesFinished.inc({ outcome: rescueOutcome(tally.ended.values()) });
      bounded(this.finished.add(jobId));
    } else bounded(this.rescues.set(jobId, tally));
  }

  /** Each queue's depth now (a queue that cannot be read keeps its last value). */
  private async readDepths(): Promise<void> {
    await Promise.all(
      this.queues.map(async ({ name, url }) => {
        const read = await this.sqs
          .send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: Object.values(DEPTH_ATTRIBUTES) }))
          .catch(() => undefined);
        if (!read?.Attributes) return;
        for (const [state, attribute] of Object.entries(DEPTH_ATTRIBUTES))
          this.depth.set({ queue: name, state }, Number(read.Attributes[attribute] ?? 0));
      }),
    );
  }

  /** Each policy worker's tokens sampled since the last scrape, and whether it answered. */
  private async readWorkers(): Promise<void> {
    await Promise.all(
      this.workers.map(async ({ name, url }) => {
        const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(WORKER_HEALTH_TIMEOUT_MS) })
          .then(async (res) => (res.ok ? WorkerHealth.safeParse(await res.json()) : undefined))
          .catch(() => undefined);
        this.workerUp.set({ model: name }, health?.success ? 1 : 0);
        if (!health?.success) return;
        const now = health.data.sampler.tokens;
        const before = this.tokensSeen.get(name) ?? 0;
        this.tokens.inc({ model: name }, now >= before ? now - before : now);
        this.tokensSeen.set(name, now);
      }),
    );
  }

  async exposition(): Promise<string> {
    await Promise.all([this.readDepths(), this.readWorkers()]);
    return this.registry.exposition();
  }
}
