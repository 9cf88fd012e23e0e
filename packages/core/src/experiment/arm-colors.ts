// No import: the web console bundles this file, and the report's plots read it, so an arm has one colour everywhere.

/** One colour per arm, wherever an arm is drawn: the console's charts and the report's PNGs. */
export const ARM_COLORS: Readonly<Record<string, string>> = {
  grpo: "#d9822b",
  "grpo-budget": "#8e44ad",
  "harness-s": "#2457c5",
  "harness-s-random": "#16a2b8",
  "harness-s-noreanchor": "#1b7f3b",
  "harness-s-single-voter": "#b3261e",
  "harness-s-adaptive": "#6d4c41",
  "harness-s-base-corrected": "#c2185b",
};
const OTHERS = ["#5d6d7e", "#7b8d42", "#a04000", "#117a65", "#6c3483", "#943126"];

/**
 * An arm's colour: its own, or for an arm registered for one study a fixed one of {@link OTHERS} by its name.
 *
 * @example
 * armColor("harness-s"); // "#2457c5"
 */
export function armColor(arm: string): string {
  const own = ARM_COLORS[arm];
  if (own) return own;
  let h = 0;
  for (const c of arm) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return OTHERS[h % OTHERS.length]!;
}
