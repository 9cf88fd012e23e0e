// The alarms' and the dashboard's settings, apart from their stack (stacks/observability.ts) so
// that tests read them without SST's globals.
import type { WORKERS } from "../infra/settings";

type Worker = (typeof WORKERS)[keyof typeof WORKERS];

/** CloudWatch's period for every alarm: SQS, Lambda and the load balancer publish each minute. */
export const ALARM_PERIOD_SECONDS = 60;

/** How many periods in a row must breach before an alarm fires. */
export const ALARM_EVALUATION_PERIODS = {
  /** One dead letter is a message every retry failed on: at once. */
  deadLetters: 1,
  /** Its threshold already allows every retry (oldestMessageSeconds). */
  oldestMessage: 1,
  /**
   * A worker reports a message's failure as a batch item failure, not an error: Lambda's Errors are crashes and
   * timeouts.
   */
  functionFaults: 1,
  /**
   * Ten minutes unhealthy: a replaced task loads its model for a few minutes first (and the balancer needs 5 failed
   * checks, 30 s apart).
   */
  gpuHealth: 10,
} as const;

/** "6 minutes" → 360. */
export function durationSeconds(duration: string): number {
  const [amount, unit] = duration.split(" ");
  const perUnit = { second: 1, seconds: 1, minute: 60, minutes: 60 }[unit ?? ""];
  if (perUnit === undefined) throw new Error(`not a duration in seconds or minutes: ${duration}`);
  return Number(amount) * perUnit;
}

/**
 * The age past which a queue's oldest message alarms: a message failing each receive lives at most
 * `retry` visibility timeouts before SQS moves it to the DLQ; one more means the queue is not
 * being drained (its worker is down, throttled or far behind).
 */
export function oldestMessageSeconds(worker: Worker): number {
  return (worker.retry + 1) * durationSeconds(worker.visibility);
}

/**
 * The metrics the dashboard reads from the functions' structured log lines (one JSON object per
 * line, the whole log event, as `jsonLinesLogger` in @harness-s/core/observability writes them:
 * `event`, `function`, `outcome`, `keyId`, `jobId`, `correlationId`), through CloudWatch Logs
 * metric filters, under `<namespace>/<stage>`. A worker logs each record it handled as a
 * `queue.record` event.
 */
export const LOG_METRICS = {
  namespace: "Harness-S",
  /** Every rollout the dispatch worker handled, whatever its outcome. */
  rollouts: { metric: "Rollouts", pattern: '{ $.event = "queue.record" && $.function = "dispatch" && $.outcome = * }' },
  /**
   * A rescue's rollouts by outcome (`Outcome` dimension): the dispatch lines whose payer's job is a rescue (`rsc_…`,
   * packages/core/src/rescue/jobs.ts), not an experiment.
   */
  rescueOutcomes: {
    metric: "RescueOutcomes",
    pattern: '{ $.event = "queue.record" && $.function = "dispatch" && $.jobId = "rsc_*" && $.outcome = * }',
    dimensions: { Outcome: "$.outcome" },
  },
  /**
   * What the deployment paid for an event (`costOfGoodsUsd`, priced as the usage meter prices it), from every
   * function's lines.
   */
  spend: { metric: "CostOfGoodsUsd", pattern: "{ $.costOfGoodsUsd > 0 }", value: "$.costOfGoodsUsd" },
} as const;

/** The dashboard's widgets by title (the tests find them so). */
export const DASHBOARD_WIDGETS = {
  routeLatency: "Route latency: API function duration (ms)",
  rollouts: "Rollouts/s",
  rescueOutcomes: "Rescue outcomes (rollouts by outcome)",
  spend: "Spend (USD)",
  queues: "Oldest message age (s)",
  deadLetters: "Dead-letter queues (messages)",
  faults: "Function errors and throttles",
  alarms: "Alarms",
} as const;

/** The AlarmEmail secret's value as an address to notify; unset or blank → none (the topic has no subscription). */
export function alarmEmailAddress(secret: string): string | undefined {
  const address = secret.trim();
  if (address === "" || address === "unset") return undefined;
  if (!/^[^\s@]+@[^\s@]+$/.test(address)) throw new Error(`the AlarmEmail secret is not an email address: ${address}`);
  return address;
}
