import { writeFileSync } from "node:fs";
import type { UsageMeter } from "@harness-s/core/billing";
import { QUOTE_BASIS_KEY, QUOTE_FIT_KEYS, QUOTE_RESCUE_KEYS, quoteConfigKeys } from "@harness-s/core/quoting";

/**
 * A benchmark's quotes, recorded for the unit test of the quote's arithmetic (tests/unit/quote-recorded.test.ts): per
 * run, the meter rows the quote read, the request, the quote the API answered and the run's metered actual. Written
 * when HARNESS_S_RECORD_QUOTES names a folder (`HARNESS_S_RECORD_QUOTES=tests/fixtures/quotes npm run bench --
 * --tests-only`), one file a benchmark.
 */
export const RECORD_QUOTES = process.env.HARNESS_S_RECORD_QUOTES;

/** Every meter row a quote of `request` reads: the deployment's basis and fit, its configuration's and its model's. */
export async function quoteRows(meter: Pick<UsageMeter, "get">, request: object): Promise<Record<string, unknown>> {
  const { env, model } = request as { env?: string; model?: string };
  const config = quoteConfigKeys(env ?? "embedded", model ?? "default");
  const keys = [
    QUOTE_BASIS_KEY,
    ...Object.values(QUOTE_RESCUE_KEYS),
    ...Object.values(QUOTE_FIT_KEYS),
    ...Object.values(config),
  ];
  return Object.fromEntries(await Promise.all(keys.map(async (k) => [k, await meter.get(k)] as const)));
}

/** Collects a benchmark's runs and rewrites `<folder>/<name>.json` after each. */
export function quoteRecorder(name: string) {
  const runs: object[] = [];
  return (run: { name: string; request: object; rows: object; quote: object; actual: object }) => {
    if (!RECORD_QUOTES) return;
    runs.push(run);
    const text = JSON.stringify({ recordedAt: new Date().toISOString(), runs }, null, 1);
    writeFileSync(`${RECORD_QUOTES}/${name}.json`, `${text}\n`);
  };
}
