import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import uPlot from "uplot";
import { describeError } from "./api.ts";

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

/** A line chart of series over a shared x axis (uPlot: small, fast, canvas). */
export function LineChart(props: {
  title: string;
  x: number[];
  series: { label: string; values: (number | null)[] }[];
  xLabel: string;
  bars?: boolean;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!ref.current || props.x.length === 0) return;
    const colors = ["#2457c5", "#d9822b", "#1b7f3b", "#8e44ad", "#b3261e", "#16a2b8"];
    const paths = props.bars ? uPlot.paths.bars?.({ size: [0.6, 40] }) : undefined;
    const plot = new uPlot(
      {
        title: props.title,
        width: 540,
        height: 240,
        scales: { x: { time: false } },
        axes: [{ label: props.xLabel }, {}],
        series: [
          {},
          ...props.series.map((s, i) => ({
            label: s.label,
            stroke: colors[i % colors.length],
            width: 2,
            points: { show: true },
            ...(paths ? { paths, fill: `${colors[i % colors.length]}55` } : {}),
          })),
        ],
      },
      [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData,
      ref.current,
    );
    return () => plot.destroy();
  }, [JSON.stringify(props)]);
  return html`<div class="chart" ref=${ref}></div>`;
}

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
