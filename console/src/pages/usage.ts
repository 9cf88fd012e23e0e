import { useState } from "preact/hooks";
import { describeError, getJson, getText } from "../api.ts";
import { ErrorLine, LineChart, fmt, html, useLoaded } from "../ui.ts";
import { everyDay } from "../axes.ts";

interface Usage {
  keyId: string;
  usage: Record<string, number>;
  requestQuota: number | null;
  budgetUsd: number | null;
  spentUsd: number;
  costOfGoodsUsd: number;
  leftUsd: number | null;
  requestsLeft: number | null;
  activeExperiments: number;
  days?: { day: string; usage: Record<string, number>; costOfGoodsUsd: number; chargeUsd: number }[];
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The usage charts' series, each its own colour. */
const SERIES_COLORS = { charge: "#2457c5", cost: "#d9822b", requests: "#1b7f3b", rollouts: "#8e44ad" };
/** A USD amount on an axis: enough digits for a small one. */
const usd = (v: number) => `$${v === 0 ? "0" : v < 0.01 ? v.toPrecision(2) : v.toFixed(2)}`;

/**
 * `#/usage`: this key's usage, and its cost of goods and charge by UTC day over a period (charts, and the CSV export).
 */
export function UsagePage() {
  const [period, setPeriod] = useState({ from: isoDay(Date.now() - 13 * 86_400_000), to: isoDay(Date.now()) });
  const [csv, setCsv] = useState<{ href: string; rows: number } | undefined>();
  const [error, setError] = useState<string | undefined>();
  const query = `from=${period.from}&to=${period.to}`;
  const usage = useLoaded(() => getJson<Usage>(`/v1/usage?${query}`), [query]);
  const days = usage.value?.days ?? [];
  const exportCsv = async () => {
    try {
      const text = await getText(`/v1/usage/export?${query}&format=csv`, "text/csv");
      if (csv) URL.revokeObjectURL(csv.href);
      setCsv({
        href: URL.createObjectURL(new Blob([text], { type: "text/csv" })),
        rows: Math.max(0, text.trim().split("\n").length - 1),
      });
    } catch (err) {
      setError(describeError(err));
    }
  };
  // Every day of the period, those without usage at zero: the axis is the period asked for.
  const periodDays = everyDay(period.from, period.to);
  const byDay = new Map(days.map((d) => [d.day, d]));
  const at = (day: string) => byDay.get(day);
  const x = periodDays.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
  const xAxis = { kind: "day" as const, from: x[0] ?? 0, to: x.at(-1) ?? 0 };
  return html`<div>
    <section>
      <h2>Usage of ${usage.value?.keyId ?? "this key"}</h2>
      <label>from <input type="date" name="from" value=${period.from} onChange=${(e: Event) => setPeriod({ ...period, from: (e.target as HTMLInputElement).value })} /></label>
      <label>to <input type="date" name="to" value=${period.to} onChange=${(e: Event) => setPeriod({ ...period, to: (e.target as HTMLInputElement).value })} /></label>
      <button class="plain" onClick=${exportCsv}>Export CSV</button>
      ${csv && html`<a data-testid="csv" download=${`usage-${period.from}-${period.to}.csv`} href=${csv.href}>usage.csv (${csv.rows} rows)</a>`}
      <${ErrorLine} error=${usage.error ?? error} />
      ${
        usage.value &&
        html`<p data-testid="limits">spent <b>$${fmt(usage.value.spentUsd, 4)}</b> (cost of goods $${fmt(usage.value.costOfGoodsUsd, 4)});
          budget ${usage.value.budgetUsd === null ? "none" : `$${fmt(usage.value.budgetUsd, 2)}, $${fmt(usage.value.leftUsd ?? 0, 4)} left`};
          quota ${usage.value.requestQuota === null ? "none" : `${fmt(usage.value.requestQuota)} requests, ${fmt(usage.value.requestsLeft ?? 0)} left`};
          ${usage.value.activeExperiments} active experiments</p>`
      }
      <div class="row">
        <${LineChart} title="Charge and cost of goods by day" xLabel="day (UTC)" yLabel="USD" yValue=${usd} x=${x} xAxis=${xAxis} bars=${true}
          series=${[
            {
              label: "charge (USD)",
              color: SERIES_COLORS.charge,
              values: periodDays.map((d) => at(d)?.chargeUsd ?? 0),
            },
            {
              label: "cost of goods (USD)",
              color: SERIES_COLORS.cost,
              values: periodDays.map((d) => at(d)?.costOfGoodsUsd ?? 0),
            },
          ]} />
        <${LineChart} title="Requests and rollouts by day" xLabel="day (UTC)" yLabel="count" x=${x} xAxis=${xAxis}
          series=${[
            {
              label: "requests",
              color: SERIES_COLORS.requests,
              values: periodDays.map((d) => at(d)?.usage.requests ?? 0),
            },
            {
              label: "rollouts",
              color: SERIES_COLORS.rollouts,
              values: periodDays.map((d) => at(d)?.usage.rollouts ?? 0),
            },
          ]} />
      </div>
      <table>
        <thead><tr><th>day</th><th>requests</th><th>rollouts</th><th>cost of goods</th><th>charge</th></tr></thead>
        <tbody>${days.map((d) => html`<tr><td>${d.day}</td><td>${fmt(d.usage.requests ?? 0)}</td><td>${fmt(d.usage.rollouts ?? 0)}</td><td>$${fmt(d.costOfGoodsUsd, 5)}</td><td>$${fmt(d.chargeUsd, 5)}</td></tr>`)}</tbody>
      </table>
      <h3>Totals</h3>
      <table><tbody>${Object.entries(usage.value?.usage ?? {}).map(([k, v]) => html`<tr><td>${k}</td><td>${fmt(v)}</td></tr>`)}</tbody></table>
    </section>
  </div>`;
}
