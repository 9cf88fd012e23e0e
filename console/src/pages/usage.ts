import { useState } from "preact/hooks";
import { describeError, getJson, getText } from "../api.ts";
import { ErrorLine, LineChart, fmt, html, useLoaded } from "../ui.ts";

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
  const x = days.map((_, i) => i);
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
        <${LineChart} title="Charge and cost of goods by day (USD)" xLabel=${days.length ? `days from ${days[0]!.day}` : "day"} x=${x} bars=${true}
          series=${[{ label: "charge", values: days.map((d) => d.chargeUsd) }, { label: "cost of goods", values: days.map((d) => d.costOfGoodsUsd) }]} />
        <${LineChart} title="Requests and rollouts by day" xLabel="day" x=${x}
          series=${[{ label: "requests", values: days.map((d) => d.usage.requests ?? 0) }, { label: "rollouts", values: days.map((d) => d.usage.rollouts ?? 0) }]} />
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
