import { useEffect, useState } from "preact/hooks";
import { getBlobUrl, getJson, getText } from "../api.ts";
import { renderReport } from "../markdown.ts";
import { armColor } from "@harness-s/core/arm-colors";
import { ErrorLine, LineChart, fmt, html, pct, useLoaded } from "../ui.ts";

const TERMINAL = ["done", "stopped", "failed", "cancelled"];
interface Status {
  id: string;
  status: string;
  progress: { done: number; total: number; label: string; rollouts?: number };
  cost: { usd: number; rollouts: number };
  quote: { chargeUsd: number; rollouts: number } | null;
  actual: { chargeUsd: number; costOfGoods: { totalUsd: number } } | null;
  stopReason: string | null;
  error: string | null;
}
interface Score {
  passAt3: number;
  avgAt3: number;
}
interface Result {
  arm: string;
  result: {
    seed: number;
    rollouts: number;
    h0: { train: Score; heldout: Score };
    curve: { step: number; h0TrainAvgAt3: number }[];
    rescue: { triggered: number; replaced: number };
  };
}
interface Step {
  arm: string;
  seed: number;
  step: number;
  rollouts: { total: number };
  groups: { meanReward: number; allFail: boolean; outcome: string }[];
}

/** Each arm's values at each x, averaged over seeds (null where an arm has none), each arm in its own colour. */
function byArm<T>(rows: T[], arm: (r: T) => string, x: (r: T) => number, y: (r: T) => number) {
  const xs = [...new Set(rows.map(x))].sort((a, b) => a - b);
  const arms = [...new Set(rows.map(arm))].sort();
  const series = arms.map((a) => ({
    label: a,
    color: armColor(a),
    values: xs.map((at) => {
      const ys = rows.filter((r) => arm(r) === a && x(r) === at).map(y);
      return ys.length ? ys.reduce((s, v) => s + v, 0) / ys.length : null;
    }),
  }));
  return { x: xs, series };
}

/** How often a running run's curves are read again (its step records and finished units). */
const CURVES_EVERY_MS = 2_000;
const STEP_AXIS = { kind: "step" as const };
const percent = (v: number) => `${v}%`;

function Curves(props: { id: string; ended: boolean }) {
  // Read again while the run goes, so the curves grow step by step; once more when it ends.
  const poll = { everyMs: CURVES_EVERY_MS, again: () => !props.ended };
  const steps = useLoaded(
    () => getJson<{ steps: Step[] }>(`/v1/experiments/${props.id}/steps`),
    [props.id, props.ended],
    poll,
  );
  const metrics = useLoaded(
    () => getJson<{ results: Result[] }>(`/v1/experiments/${props.id}/metrics`),
    [props.id, props.ended],
    poll,
  );
  const stepRows = steps.value?.steps ?? [];
  const reward = byArm(
    stepRows,
    (s) => s.arm,
    (s) => s.step,
    (s) => s.groups.reduce((a, g) => a + g.meanReward, 0) / Math.max(1, s.groups.length),
  );
  const curvePoints = (metrics.value?.results ?? []).flatMap((r) => r.result.curve.map((p) => ({ arm: r.arm, ...p })));
  const curve = byArm(
    curvePoints,
    (p) => p.arm,
    (p) => p.step,
    (p) => 100 * p.h0TrainAvgAt3,
  );
  const results = metrics.value?.results ?? [];
  const oneStep = (x: number[]) =>
    x.length === 1 ? html`<p class="muted">one step so far: a point, not yet a curve</p>` : null;
  return html`<section>
    <h2>Learning curves</h2>
    <div class="row">
      <div>
        <${LineChart} title="H0 Avg@3 on train tasks, by step" xLabel="training step" yLabel="H0 Avg@3 (%)" yValue=${percent} x=${curve.x} xAxis=${STEP_AXIS} series=${curve.series} />
        ${oneStep(curve.x)}
      </div>
      <div>
        <${LineChart} title="Mean group reward, by step" xLabel="training step" yLabel="mean reward" x=${reward.x} xAxis=${STEP_AXIS} series=${reward.series} />
        ${oneStep(reward.x)}
      </div>
    </div>
    <p class="muted" data-testid="curve-records">${stepRows.length} step records; ${results.length} finished (arm, seed) units.</p>
    <h3>Per-arm comparison</h3>
    <table data-testid="arms">
      <thead><tr><th>arm</th><th>seed</th><th>rollouts</th><th>train Avg@3</th><th>held-out Avg@3</th><th>held-out Pass@3</th><th>rescues (replaced/triggered)</th></tr></thead>
      <tbody>
        ${results.map(
          (r) => html`<tr>
            <td><span class="swatch" style=${`background:${armColor(r.arm)}`}></span>${r.arm}</td><td>${r.result.seed}</td><td>${r.result.rollouts}</td><td>${pct(r.result.h0.train.avgAt3)}</td>
            <td>${pct(r.result.h0.heldout.avgAt3)}</td><td>${pct(r.result.h0.heldout.passAt3)}</td><td>${r.result.rescue.replaced}/${r.result.rescue.triggered}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    <${ErrorLine} error=${steps.error ?? metrics.error} />
  </section>`;
}

function Report(props: { id: string }) {
  const report = useLoaded(() => getText(`/v1/experiments/${props.id}/report`, "text/markdown"), [props.id]);
  const [plots, setPlots] = useState<{ file: string; src: string }[]>([]);
  useEffect(() => {
    let urls: string[] = [];
    getJson<{ plots: { file: string; url: string }[] }>(`/v1/experiments/${props.id}/plots`)
      .then((listing) => Promise.all(listing.plots.map(async (p) => ({ file: p.file, src: await getBlobUrl(p.url) }))))
      .then((loaded) => {
        urls = loaded.map((p) => p.src);
        setPlots(loaded);
      })
      .catch(() => setPlots([]));
    return () => {
      for (const u of urls) URL.revokeObjectURL(u);
    };
  }, [props.id]);
  return html`<section>
    <h2>Report</h2>
    <div class="plots">${plots.map((p) => html`<img alt=${p.file} data-file=${p.file} src=${p.src} />`)}</div>
    ${report.value !== undefined ? html`<div class="report" data-testid="report" dangerouslySetInnerHTML=${{ __html: renderReport(report.value, Object.fromEntries(plots.map((p) => [p.file, p.src]))) }}></div>` : null}
    <${ErrorLine} error=${report.error} />
  </section>`;
}

/** `#/experiments/{id}`: its progress, polled until it ends; its curves; once ended, its report and plots. */
export function ExperimentDetail(props: { id: string }) {
  const status = useLoaded(() => getJson<Status>(`/v1/experiments/${encodeURIComponent(props.id)}`), [props.id], {
    everyMs: 1000,
    again: (s) => !TERMINAL.includes(s.status),
  });
  const s = status.value;
  const ended = s !== undefined && TERMINAL.includes(s.status);
  const pct = s && s.progress.total > 0 ? (100 * s.progress.done) / s.progress.total : 0;
  return html`<div>
    <section>
      <h2>Experiment ${props.id}</h2>
      <${ErrorLine} error=${status.error} />
      ${
        s &&
        html`<p>
          Status: <b data-testid="status">${s.status}</b>
          <span class="bar"><span style=${`width:${pct}%`}></span></span> ${s.progress.done}/${s.progress.total} ${s.progress.label}
        </p>
        <p class="muted" data-testid="billed">charged so far $${fmt(s.actual?.chargeUsd ?? s.cost.usd, 4)} for ${s.cost.rollouts} rollouts${s.actual ? ` (cost of goods $${fmt(s.actual.costOfGoods.totalUsd, 4)})` : ""}${s.quote ? `; quoted $${fmt(s.quote.chargeUsd, 4)} for ${s.quote.rollouts} rollouts` : ""}${s.stopReason ? `; ${s.stopReason}` : ""}${s.error ? `; ${s.error}` : ""}</p>`
      }
    </section>
    ${s && html`<${Curves} id=${props.id} ended=${ended} />`}
    ${ended && html`<${Report} id=${props.id} />`}
  </div>`;
}
