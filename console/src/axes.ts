// The charts' axes, kept apart from uPlot (no import) so that their rules are unit-tested (tests/unit/console-axes.test.ts).

/** How a chart's x axis reads: training steps (whole numbers), or UTC days (`x` in seconds since the epoch). */
export type XAxis = { kind: "step" } | { kind: "day"; from: number; to: number };

export const DAY_S = 86_400;

/**
 * The x scale's range: a day axis spans its whole period (days without usage included); a single step gets room on
 * both sides rather than uPlot's degenerate 0–100.
 */
export function xRange(axis: XAxis, min: number, max: number): [number, number] {
  if (axis.kind === "day") return [axis.from - DAY_S / 2, axis.to + DAY_S / 2];
  return min === max ? [min - 1, max + 1] : [min, max];
}

/** The y scale's range: from zero (a share or an amount), to a little above the largest value (1 when all are 0). */
export const yRange = (max: number | null): [number, number] => [0, max !== null && max > 0 ? max * 1.1 : 1];

/** Every UTC day from `from` to `to`, both included (at most the API's 366). */
export function everyDay(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`) && out.length < 366; t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}
