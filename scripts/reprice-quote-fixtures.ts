// Re-prices the recorded quote fixtures (tests/fixtures/quotes/*.json) at today's tariff: each run's quoted and actual
// `chargeUsd` recomputed from the usage recorded with it (the rows, usage and cost of goods stay as recorded). Run after
// a tariff change: `node --import tsx scripts/reprice-quote-fixtures.ts`.
import { readFileSync, writeFileSync } from "node:fs";
import { PriceList, chargeUsd, tariffOver } from "@harness-s/core/billing";

const tariff = tariffOver(PriceList.parse({}));
for (const name of ["configurations", "embedded-mixes"]) {
  const file = new URL(`../tests/fixtures/quotes/${name}.json`, import.meta.url);
  const doc = JSON.parse(readFileSync(file, "utf8"));
  for (const run of doc.runs) {
    run.quote.chargeUsd = chargeUsd({ ...run.quote.usage, rollouts: run.quote.rollouts }, tariff);
    run.actual.chargeUsd = chargeUsd(run.actual.usage, tariff);
  }
  writeFileSync(file, `${JSON.stringify(doc, null, 1)}\n`);
}
