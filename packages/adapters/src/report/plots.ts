import type { TopLevelSpec } from "vega-lite";

/**
 * Renders a Vega-Lite spec to PNG bytes, fully offline (SVG through resvg). Vega, Vega-Lite and resvg load at the first
 * plot (about 250 modules): a process that imports the report's code but draws nothing (the CLI's help, a server that
 * has finished no run yet) does not load them.
 */
export async function renderPng(spec: TopLevelSpec): Promise<Buffer> {
  const [vega, { compile }, { Resvg }] = await Promise.all([
    import("vega"),
    import("vega-lite"),
    import("@resvg/resvg-js"),
  ]);
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  const svg = await view.toSVG();
  view.finalize();
  const png = new Resvg(svg, { background: "white", fitTo: { mode: "zoom", value: 2 } }).render().asPng();
  return Buffer.from(png);
}

/**
 * A line chart of `y` by `x`, a line per value of `color` (`colors`: that value's colour, e.g. each arm's, so a series
 * is drawn alike everywhere). The x axis counts steps: whole numbers only, and a single step is shown with room on
 * both sides rather than as a degenerate axis.
 */
export function lineChart(
  title: string,
  rows: Record<string, unknown>[],
  x: string,
  y: string,
  color: string,
  yTitle: string,
  errorBand = false,
  colors?: (value: string) => string,
): TopLevelSpec {
  const values = [...new Set(rows.map((r) => String(r[color])))].sort();
  const xs = rows.map((r) => Number(r[x]));
  const [lo, hi] = [Math.min(...xs), Math.max(...xs)];
  const xEnc = {
    field: x,
    type: "quantitative" as const,
    axis: { tickMinStep: 1, format: "d" },
    ...(xs.length > 0 && lo === hi ? { scale: { domain: [lo - 1, hi + 1] } } : {}),
  };
  const colorEnc = {
    field: color,
    type: "nominal" as const,
    ...(colors ? { scale: { domain: values, range: values.map(colors) } } : {}),
  };
  const line = {
    mark: { type: "line" as const, point: true },
    encoding: {
      x: xEnc,
      y: { aggregate: "mean" as const, field: y, type: "quantitative" as const, title: yTitle },
      color: colorEnc,
    },
  };
  const band = {
    mark: { type: "errorband" as const, extent: "stdev" as const, opacity: 0.15 },
    encoding: {
      x: xEnc,
      y: { field: y, type: "quantitative" as const, title: yTitle },
      color: colorEnc,
    },
  };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    width: 520,
    height: 300,
    data: { values: rows },
    layer: errorBand ? [band, line] : [line],
  } as TopLevelSpec;
}

/** Side-by-side panels, one per value of `panel`, each with its own x scale. */
export function panels(
  title: string,
  charts: { title: string; rows: Record<string, unknown>[]; x: string; y: string; color: string; yTitle: string }[],
): TopLevelSpec {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    hconcat: charts.map((c) => {
      const {
        $schema: _s,
        title: _t,
        ...rest
      } = lineChart(c.title, c.rows, c.x, c.y, c.color, c.yTitle, true) as unknown as Record<string, unknown>;
      return { ...rest, title: c.title, width: 360 };
    }),
  } as TopLevelSpec;
}
