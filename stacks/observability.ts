/**
 * Alarms and a dashboard for a deployment (docs/operations.md, "Alarms and dashboard"): an alarm on
 * each DLQ's depth, each queue's oldest message, each function's errors and throttles and the GPU
 * endpoint's health check, all notifying one SNS topic (an email subscription when the AlarmEmail
 * secret is set); a dashboard with the route latency, rollouts/s, rescue outcomes and spend, the
 * last three from metric filters on the functions' structured log lines (LOG_METRICS).
 */
import { WORKERS } from "../infra/settings";
import {
  ALARM_EVALUATION_PERIODS,
  ALARM_PERIOD_SECONDS,
  DASHBOARD_WIDGETS,
  LOG_METRICS,
  alarmEmailAddress,
  oldestMessageSeconds,
} from "./observability-settings";

type WorkerName = keyof typeof WORKERS;
type Lambda = { name: $util.Output<string>; logGroup: $util.Output<string> };

export interface Observed {
  /** Each worker's queue (its DLQ is the one its redrive policy names) and its subscription. */
  workers: Record<WorkerName, { queue: sst.aws.Queue; subscriber: ReturnType<sst.aws.Queue["subscribe"]> }>;
  api: sst.aws.Function;
  /** Functions on other queues than the workers' (the dispatch DLQ's consumer), by name: alarmed and drawn as they are. */
  others?: Record<string, ReturnType<sst.aws.Queue["subscribe"]>>;
  /**
   * The GPU endpoint's balancer and target group, by ARN suffix (CloudWatch's dimensions); absent without the endpoint.
   */
  gpu?: { loadBalancer: $util.Input<string>; targetGroup: $util.Input<string> };
}

export function observability(observed: Observed) {
  const topic = alarmTopic();
  const namespace = `${LOG_METRICS.namespace}/${$app.stage}`;
  const lambdas = {
    Api: lambdaOf(observed.api),
    ...Object.fromEntries(
      Object.entries(observed.workers).map(([worker, w]) => [
        title(worker),
        lambdaOf(w.subscriber.apply((s) => s.nodes.function)),
      ]),
    ),
    ...Object.fromEntries(
      Object.entries(observed.others ?? {}).map(([name, s]) => [name, lambdaOf(s.apply((x) => x.nodes.function))]),
    ),
  } as Record<string, Lambda>;
  const queues = Object.entries(observed.workers).map(([worker, w]) => ({
    worker: worker as WorkerName,
    name: title(worker),
    ...queueNames(w.queue),
  }));

  const alarm = alarmOn(topic);
  const alarms = [
    ...queueAlarms(alarm, queues),
    ...functionAlarms(alarm, lambdas),
    ...(observed.gpu
      ? [
          // The balancer's own health check of the worker's /healthz: no healthy target is an endpoint that answers
          // nothing.
          alarm("PolicyEndpointHealthAlarm", {
            description:
              "The GPU endpoint has no healthy target (its /healthz check fails or its task is not running): rollouts on the deployment's policy fail.",
            namespace: "AWS/ApplicationELB",
            metric: "HealthyHostCount",
            dimensions: { TargetGroup: observed.gpu.targetGroup, LoadBalancer: observed.gpu.loadBalancer },
            statistic: "Minimum",
            comparison: "LessThanThreshold",
            threshold: 1,
            evaluationPeriods: ALARM_EVALUATION_PERIODS.gpuHealth,
            missingData: "breaching",
          }),
        ]
      : []),
  ];

  logMetrics(namespace, lambdas);
  const dashboard = new aws.cloudwatch.Dashboard("Dashboard", {
    dashboardName: `${$app.name}-${$app.stage}`,
    dashboardBody: $jsonStringify({ widgets: widgets(namespace, lambdas, queues, alarms) }),
  });
  return { topic, alarms, dashboard };
}

/**
 * The topic every alarm notifies, with an email subscription to the AlarmEmail secret's address when it is set (`npx
 * sst secret set AlarmEmail …`).
 */
function alarmTopic() {
  const topic = new aws.sns.Topic("Alarms");
  const email = new sst.Secret("AlarmEmail", "unset");
  email.value.apply((value) => {
    const address = alarmEmailAddress(value);
    if (address)
      new aws.sns.TopicSubscription("AlarmEmailSubscription", {
        topic: topic.arn,
        protocol: "email",
        endpoint: address,
      });
  });
  return topic;
}

type AlarmSpec = {
  description: string;
  namespace: string;
  metric: string;
  dimensions: Record<string, $util.Input<string>>;
  statistic: "Maximum" | "Minimum" | "Sum";
  comparison: "GreaterThanThreshold" | "LessThanThreshold";
  threshold: number;
  evaluationPeriods: number;
  missingData?: "breaching" | "notBreaching";
};

function alarmOn(topic: aws.sns.Topic) {
  return (name: string, a: AlarmSpec) =>
    new aws.cloudwatch.MetricAlarm(name, {
      alarmDescription: a.description,
      namespace: a.namespace,
      metricName: a.metric,
      dimensions: a.dimensions,
      statistic: a.statistic,
      comparisonOperator: a.comparison,
      threshold: a.threshold,
      period: ALARM_PERIOD_SECONDS,
      evaluationPeriods: a.evaluationPeriods,
      // No data: an idle queue or function is a healthy one (the GPU endpoint's says otherwise).
      treatMissingData: a.missingData ?? "notBreaching",
      alarmActions: [topic.arn],
      okActions: [topic.arn],
    });
}

/** Each queue's alarms: its DLQ holds messages, or its oldest message has waited longer than its retries could take. */
function queueAlarms(alarm: ReturnType<typeof alarmOn>, queues: (QueueRow & { worker: WorkerName })[]) {
  return queues.flatMap((q) => [
    alarm(`${q.name}DlqDepthAlarm`, {
      description: `${q.name} DLQ holds messages every retry failed on: read them (the worker's log has each failure), fix the cause, redrive or purge.`,
      namespace: "AWS/SQS",
      metric: "ApproximateNumberOfMessagesVisible",
      dimensions: { QueueName: q.dlq },
      statistic: "Maximum",
      comparison: "GreaterThanThreshold",
      threshold: 0,
      evaluationPeriods: ALARM_EVALUATION_PERIODS.deadLetters,
    }),
    alarm(`${q.name}QueueAgeAlarm`, {
      description: `${q.name} queue's oldest message has waited longer than all its retries could take: its worker is failing, throttled or far behind.`,
      namespace: "AWS/SQS",
      metric: "ApproximateAgeOfOldestMessage",
      dimensions: { QueueName: q.queue },
      statistic: "Maximum",
      comparison: "GreaterThanThreshold",
      threshold: oldestMessageSeconds(WORKERS[q.worker]),
      evaluationPeriods: ALARM_EVALUATION_PERIODS.oldestMessage,
    }),
  ]);
}

/** Each function's alarms: it crashed or timed out, and it was throttled. */
function functionAlarms(alarm: ReturnType<typeof alarmOn>, lambdas: Record<string, Lambda>) {
  return Object.entries(lambdas).flatMap(([name, fn]) =>
    (["Errors", "Throttles"] as const).map((metric) =>
      alarm(`${name}${metric}Alarm`, {
        description:
          metric === "Errors"
            ? `The ${name} function crashed or timed out: its log group has the error.`
            : `The ${name} function was throttled: the account's or its own concurrency limit was reached.`,
        namespace: "AWS/Lambda",
        metric,
        dimensions: { FunctionName: fn.name },
        statistic: "Sum",
        comparison: "GreaterThanThreshold",
        threshold: 0,
        evaluationPeriods: ALARM_EVALUATION_PERIODS.functionFaults,
      }),
    ),
  );
}

/** Rollouts, rescue outcomes (dispatch's lines) and spend (every function's lines) from the structured log lines. */
function logMetrics(namespace: string, lambdas: Record<string, Lambda>) {
  const dispatch = lambdas[title("dispatch")]!;
  const { rollouts, rescueOutcomes, spend } = LOG_METRICS;
  new aws.cloudwatch.LogMetricFilter("RolloutsMetricFilter", {
    name: "harness-s-rollouts",
    logGroupName: dispatch.logGroup,
    pattern: rollouts.pattern,
    metricTransformation: { namespace, name: rollouts.metric, value: "1", defaultValue: "0" },
  });
  new aws.cloudwatch.LogMetricFilter("RescueOutcomesMetricFilter", {
    name: "harness-s-rescue-outcomes",
    logGroupName: dispatch.logGroup,
    pattern: rescueOutcomes.pattern,
    metricTransformation: { namespace, name: rescueOutcomes.metric, value: "1", dimensions: rescueOutcomes.dimensions },
  });
  for (const [name, fn] of Object.entries(lambdas))
    new aws.cloudwatch.LogMetricFilter(`${name}SpendMetricFilter`, {
      name: "harness-s-spend",
      logGroupName: fn.logGroup,
      pattern: spend.pattern,
      metricTransformation: { namespace, name: spend.metric, value: spend.value, unit: "None" },
    });
}

type QueueRow = { name: string; queue: $util.Output<string>; dlq: $util.Output<string> };

function widgets(
  namespace: string,
  lambdas: Record<string, Lambda>,
  queues: QueueRow[],
  alarms: aws.cloudwatch.MetricAlarm[],
) {
  const region = aws.getRegionOutput().name;
  const api = lambdas.Api!.name;
  const graph = (title: string, metrics: unknown[], extra: Record<string, unknown> = {}) => ({
    type: "metric",
    width: 12,
    height: 6,
    properties: { title, region, view: "timeSeries", period: ALARM_PERIOD_SECONDS, metrics, ...extra },
  });
  return [
    graph(DASHBOARD_WIDGETS.routeLatency, [
      ["AWS/Lambda", "Duration", "FunctionName", api, { stat: "p50", label: "p50" }],
      ["AWS/Lambda", "Duration", "FunctionName", api, { stat: "p99", label: "p99" }],
    ]),
    ...logMetricGraphs(graph, namespace),
    ...queueGraphs(graph, queues),
    graph(
      DASHBOARD_WIDGETS.faults,
      Object.entries(lambdas).flatMap(([name, fn]) =>
        (["Errors", "Throttles"] as const).map((metric) => [
          "AWS/Lambda",
          metric,
          "FunctionName",
          fn.name,
          { stat: "Sum", label: `${name} ${metric.toLowerCase()}` },
        ]),
      ),
    ),
    {
      type: "alarm",
      width: 24,
      height: 4,
      properties: { title: DASHBOARD_WIDGETS.alarms, alarms: alarms.map((a) => a.arn) },
    },
  ];
}

/** A dashboard graph of `metrics` under `title` (`extra`: its own period, …). */
type Graph = (title: string, metrics: unknown[], extra?: Record<string, unknown>) => Record<string, unknown>;

/** The graphs of the log lines' metrics: rollouts per second, rescue outcomes, and spend beside AWS's charges. */
function logMetricGraphs(graph: Graph, namespace: string) {
  return [
    graph(DASHBOARD_WIDGETS.rollouts, [
      [{ id: "perSecond", expression: "rollouts / PERIOD(rollouts)", label: "rollouts/s" }],
      [namespace, LOG_METRICS.rollouts.metric, { id: "rollouts", stat: "Sum", visible: false }],
    ]),
    graph(DASHBOARD_WIDGETS.rescueOutcomes, [
      [
        {
          id: "outcomes",
          expression: `SEARCH('{"${namespace}",Outcome} MetricName="${LOG_METRICS.rescueOutcomes.metric}"', 'Sum', ${ALARM_PERIOD_SECONDS * 5})`,
        },
      ],
    ]),
    graph(
      DASHBOARD_WIDGETS.spend,
      [
        [namespace, LOG_METRICS.spend.metric, { stat: "Sum", label: "cost of goods (logged)" }],
        // Billing metrics live in us-east-1 only, and only once the account's billing alerts are on.
        [
          "AWS/Billing",
          "EstimatedCharges",
          "Currency",
          "USD",
          { stat: "Maximum", region: "us-east-1", label: "AWS estimated charges (account, month to date)" },
        ],
      ],
      { period: 3600 },
    ),
  ];
}

/** The queues' graphs: each queue's oldest message's age, and each DLQ's depth. */
function queueGraphs(graph: Graph, queues: QueueRow[]) {
  return [
    graph(
      DASHBOARD_WIDGETS.queues,
      queues.map((q) => [
        "AWS/SQS",
        "ApproximateAgeOfOldestMessage",
        "QueueName",
        q.queue,
        { stat: "Maximum", label: q.name },
      ]),
    ),
    graph(
      DASHBOARD_WIDGETS.deadLetters,
      queues.map((q) => [
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "QueueName",
        q.dlq,
        { stat: "Maximum", label: `${q.name} DLQ` },
      ]),
    ),
  ];
}

/** A queue's name and its DLQ's, the one its redrive policy sends to (an SQS ARN ends with the queue's name). */
function queueNames(queue: sst.aws.Queue) {
  const q = queue.nodes.queue;
  return {
    queue: q.name,
    dlq: q.redrivePolicy.apply((policy) => String(JSON.parse(policy).deadLetterTargetArn).split(":").pop()!),
  };
}

/** A function's Lambda name and the log group SST made for it (the Lambda's logging config names it). */
function lambdaOf(fn: sst.aws.Function | $util.Output<sst.aws.Function>): Lambda {
  const f = $util.output(fn) as $util.Output<sst.aws.Function>;
  // Neither is a secret, though a function whose links hold secrets is made inside an apply over them.
  return {
    name: $util.unsecret(f.apply((x) => x.name)),
    logGroup: $util.unsecret(f.apply((x) => x.nodes.function.loggingConfig.logGroup)),
  };
}

const title = (worker: string) => worker[0]!.toUpperCase() + worker.slice(1);
