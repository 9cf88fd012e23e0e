/*
 * The Prometheus text exposition format (version 0.0.4), written by hand: counters, gauges and
 * histograms with labels, each family with its HELP and TYPE, label values escaped.
 */

/** The content type of {@link MetricRegistry.exposition}. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Series one family keeps at most (label values past it are not recorded), and a label value's longest. */
export const METRIC_LIMITS = { seriesPerFamily: 2_000, labelValueChars: 200 } as const;

/** Seconds: from a cached read to a rollout held on a slow endpoint. */
export const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

type Labels<L extends string> = Partial<Record<L, string>>;

const escapeHelp = (s: string) => s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
const escapeLabel = (s: string) =>
  s.slice(0, METRIC_LIMITS.labelValueChars).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const formatValue = (v: number) =>
  Number.isNaN(v) ? "NaN" : v === Infinity ? "+Inf" : v === -Infinity ? "-Inf" : String(v);

/** One family: its series by their label values. */
abstract class Family<L extends string, S> {
  protected readonly series = new Map<string, { values: string[]; state: S }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
  ) {
    if (!METRIC_NAME.test(name)) throw new Error(`metric name ${name} is not valid`);
    for (const l of labelNames)
      if (!LABEL_NAME.test(l) || l === "le") throw new Error(`label name ${l} of ${name} is not valid`);
  }
  abstract readonly type: "counter" | "gauge" | "histogram";
  protected abstract fresh(): S;
  protected abstract sampleLines(labels: string, state: S): string[];

  /** The state of the series with these labels, made on first use; none past the family's bound. */
  protected at(labels: Labels<L>): S | undefined {
    const values = this.labelNames.map((n) => labels[n] ?? "");
    const key = values.join("\u0000");
    const found = this.series.get(key);
    if (found) return found.state;
    if (this.series.size >= METRIC_LIMITS.seriesPerFamily) return undefined;
    const state = this.fresh();
    this.series.set(key, { values, state });
    return state;
  }

  /** Its HELP and TYPE lines, then each series' samples. */
  lines(): string[] {
    const out = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    for (const { values, state } of this.series.values())
      out.push(
        ...this.sampleLines(this.labelNames.map((n, i) => `${n}="${escapeLabel(values[i]!)}"`).join(","), state),
      );
    return out;
  }
}

const braced = (labels: string) => (labels ? `{${labels}}` : "");

/** A count that only goes up (a restart starts it again at 0, as Prometheus expects). */
export class Counter<L extends string = never> extends Family<L, { v: number }> {
  readonly type = "counter";
  protected fresh() {
    return { v: 0 };
  }
  protected sampleLines(labels: string, s: { v: number }) {
    return [`${this.name}${braced(labels)} ${formatValue(s.v)}`];
  }
  inc(labels: Labels<L> = {}, by = 1): void {
    if (by < 0 || !Number.isFinite(by)) return;
    const s = this.at(labels);
    if (s) s.v += by;
  }
}

/** A value read as it is now (a queue's depth). */
export class Gauge<L extends string = never> extends Family<L, { v: number }> {
  readonly type = "gauge";
  protected fresh() {
    return { v: 0 };
  }
  protected sampleLines(labels: string, s: { v: number }) {
    return [`${this.name}${braced(labels)} ${formatValue(s.v)}`];
  }
  set(labels: Labels<L>, value: number): void {
    const s = this.at(labels);
    if (s) s.v = value;
  }
}

type HistogramState = { counts: number[]; sum: number; count: number };

/** Observations in cumulative buckets (`le`), with their sum and count. */
export class Histogram<L extends string = never> extends Family<L, HistogramState> {
  readonly type = "histogram";
  constructor(
    name: string,
    help: string,
    labelNames: readonly L[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
    if (!buckets.length || buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]!)))
      throw new Error(`the buckets of ${name} must be finite and increasing`);
  }
  protected fresh() {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }
  protected sampleLines(labels: string, s: HistogramState) {
    const le = (b: string) => `{${labels ? `${labels},` : ""}le="${b}"}`;
    return [
      ...this.buckets.map((b, i) => `${this.name}_bucket${le(formatValue(b))} ${s.counts[i]}`),
      `${this.name}_bucket${le("+Inf")} ${s.count}`,
      `${this.name}_sum${braced(labels)} ${formatValue(s.sum)}`,
      `${this.name}_count${braced(labels)} ${s.count}`,
    ];
  }
  observe(labels: Labels<L>, value: number): void {
    if (!Number.isFinite(value)) return;
    const s = this.at(labels);
    if (!s) return;
    this.buckets.forEach((b, i) => {
      if (value <= b) s.counts[i]!++;
    });
    s.sum += value;
    s.count++;
  }
}

/**
 * The families one exposition shows, in the order they were made.
 *
 * @example
 * const registry = new MetricRegistry();
 * const requests = registry.counter("harness_s_http_requests_total", "Requests answered", ["route", "status"]);
 * requests.inc({ route: "/v1/route", status: "200" });
 * registry.exposition(); // "# HELP harness_s_http_requests_total Requests answered\n# TYPE … counter\nharness_s_http_requests_total{route=\"/v1/route\",status=\"200\"} 1\n"
 */
export class MetricRegistry {
  private readonly families: Family<string, unknown>[] = [];
  private add<F extends Family<string, unknown>>(family: F): F {
    if (this.families.some((f) => f.name === family.name)) throw new Error(`metric ${family.name} is registered twice`);
    this.families.push(family);
    return family;
  }
  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.add(new Counter<L>(name, help, labelNames));
  }
  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return this.add(new Gauge<L>(name, help, labelNames));
  }
  histogram<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: readonly number[] = LATENCY_BUCKETS_SECONDS,
  ): Histogram<L> {
    return this.add(new Histogram<L>(name, help, labelNames, buckets));
  }
  /** Every family in the text format, ending with a newline. */
  exposition(): string {
    return `${this.families.flatMap((f) => f.lines()).join("\n")}\n`;
  }
}

/** What `/metrics` serves: the exposition, once any value read at scrape time (a queue's depth) is read. */
export interface MetricsSource {
  exposition(): Promise<string>;
}
