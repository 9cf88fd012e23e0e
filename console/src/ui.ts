import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import uPlot from "uplot";
import { describeError } from "./api.ts";
import { type XAxis, xRange, yRange } from "./axes.ts";

/** Preact's h through htm: components are tagged templates, no JSX build step. */
export const html = htm.bind(h);

/** What an async read gave: its value, its error, and a way to read it again. */
export interface Loaded<T> {
  value: T | undefined;
  error: string | undefined;
  reload: () => void;
}

/** Reads `load()` when `deps` change, and again every `everyMs` while `again(value)` holds. */
export function useLoaded<T>(
  load: () => Promise<T>,
  deps: unknown[],
  poll?: { everyMs: number; again: (v: T) => boolean },
): Loaded<T> {
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    load().then(
      (value) => {
        if (!live) return;
        setState({ value });
        if (poll?.again(value)) timer = setTimeout(() => setTick((t) => t + 1), poll.everyMs);
      },
      (err) => live && setState({ error: describeError(err) }),
    );
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { value: state.value, error: state.error, reload: () => setTick((t) => t + 1) };
}

/** A series of a chart: its label, its values at the shared x, and its colour (an arm's own, `armColor`). */
export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
}

/** A line (or bar) chart of series over a shared x axis, both axes labelled with their units (uPlot: canvas). */
export function LineChart(props: {
  title: string;
  x: number[];
  series: Series[];
  xAxis: XAxis;
  xLabel: string;
  yLabel: string;
  /** How a y value is written on the axis (its unit). */
  yValue?: (v: number) => string;
  bars?: boolean;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!ref.current || props.x.length === 0) return;
    const paths = props.bars ? uPlot.paths.bars?.({ size: [0.6, 40] }) : undefined;
    const day = props.xAxis.kind === "day";
    const plot = new uPlot(
      {
        title: props.title,
        width: 540,
        height: 260,
        legend: { live: false },
        scales: {
          x: { time: day, range: (_u, min, max) => xRange(props.xAxis, min, max) },
          y: { range: (_u, _min, max) => yRange(max) },
        },
        axes: [
          day
            ? {
                label: props.xLabel,
                space: 60,
                values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toISOString().slice(5, 10)),
              }
            : {
                label: props.xLabel,
                incrs: [1, 2, 5, 10, 20, 50, 100],
                values: (_u, ticks) => ticks.map((t) => String(t)),
              },
          { label: props.yLabel, size: 70, values: (_u, ticks) => ticks.map((t) => (props.yValue ?? String)(t)) },
        ],
        series: [
          { label: props.xLabel },
          ...props.series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            points: { show: true },
            ...(paths ? { paths, fill: `${s.color}55` } : {}),
          })),
        ],
      },
      [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData,
      ref.current,
    );
    return () => plot.destroy();
  }, [JSON.stringify({ ...props, yValue: undefined })]);
  // The axes' titles are drawn on the canvas; said again under it as text (units included), for every reader.
  return html`<figure class="chart-box">
    <div class="chart" data-chart=${props.title} ref=${ref}></div>
    <figcaption class="axes" data-testid="axes">x: ${props.xLabel}; y: ${props.yLabel}</figcaption>
  </figure>`;
}

/** A share in [0, 1] as the report writes it: percent, one decimal. */
export const pct = (v: number | null | undefined): string =>
  v === null || v === undefined ? "–" : `${(100 * v).toFixed(1)}%`;

/** A JSON-ish value as a short table cell. */
export const fmt = (v: unknown, digits = 3): string =>
  typeof v === "number"
    ? Number.isInteger(v)
      ? String(v)
      : v.toFixed(digits)
    : v === undefined || v === null
      ? "–"
      : String(v);

/** An error line, when there is one. */
export const ErrorLine = (props: { error: string | undefined }) =>
  props.error ? html`<p class="error" role="alert">${props.error}</p>` : null;
