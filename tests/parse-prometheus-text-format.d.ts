// Types for the untyped parser the metrics tests read `/metrics` with (its output mirrors prom2json's).
declare module "parse-prometheus-text-format" {
  type Labels = Record<string, string>;
  export type ParsedMetric = {
    labels?: Labels;
    value?: string;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
    quantiles?: Record<string, string>;
  };
  export type ParsedFamily = {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: ParsedMetric[];
  };
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
