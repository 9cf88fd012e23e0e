import cliProgress from "cli-progress";

/** A progress bar on a terminal; periodic plain lines elsewhere (CI logs). */
export interface Progress {
  update(value: number, label: string): void;
  stop(): void;
}

export function createProgress(total: number, title: string): Progress {
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${title} [{bar}] {percentage}% | {value}/{total} | {label} | eta {eta_formatted}`,
        stream: process.stderr,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { label: "" });
    return { update: (value, label) => bar.update(value, { label }), stop: () => bar.stop() };
  }
  let lastPct = -1;
  return {
    update(value, label) {
      const pct = Math.floor((100 * value) / total / 10) * 10;
      if (pct !== lastPct) {
        lastPct = pct;
        process.stderr.write(`${title}: ${pct}% (${value}/${total}) ${label}\n`);
      }
    },
    stop() {},
  };
}
