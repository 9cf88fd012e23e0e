import { ForbiddenError } from "../errors.ts";
import { chargeUsd, costOfGoods, type PriceList, type Prices, type UsagePeriod } from "./cost-of-goods.ts";
import { isQuoteBasisKey, zeroUsage, type Usage, type UsageDay, type UsageMeter } from "./usage.ts";

/** One row of a usage report: a key's day, its usage, what it cost this deployment and what it is charged. */
export interface UsageRow extends UsageDay {
  costOfGoodsUsd: number;
  chargeUsd: number;
}

/**
 * `GET /v1/usage?from&to`: a key's own usage by UTC day; an admin key may name another key, or
 * `*` for every key (the export an invoicing system reads). Each row has its cost of goods and
 * its charge at the tariff, apart.
 *
 * @example
 * const rows = await usageByDay({ from: "2026-12-01", to: "2026-12-31", granularity: "day" }, key, deps);
 */
export async function usageByDay(
  period: UsagePeriod,
  key: { id: string; scopes: readonly string[] },
  deps: { meter: Pick<UsageMeter, "byDay">; tariff: Prices; priceList: PriceList },
): Promise<UsageRow[]> {
  const asked = period.keyId ?? key.id;
  if (asked !== key.id && !key.scopes.includes("admin")) throw new ForbiddenError("admin");
  // The quote rows count finished jobs' usage again: they are nobody's to pay
  const days = (
    await deps.meter.byDay({ from: period.from, to: period.to, ...(asked === "*" ? {} : { keyId: asked }) })
  ).filter((d) => !isQuoteBasisKey(d.keyId));
  return days.map((d) => ({
    ...d,
    costOfGoodsUsd: costOfGoods(d.usage, deps.priceList).totalUsd,
    chargeUsd: chargeUsd(d.usage, deps.tariff),
  }));
}

const FIELDS = Object.keys(zeroUsage) as (keyof Usage)[];
/**
 * Text a spreadsheet would run as a formula (OWASP's CSV injection list): =, +, -, @, a tab or a carriage return first.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
/**
 * One CSV cell: a number as a number (a negative one too: a sheet reads `-3` as minus three, not
 * as a formula); text always quoted (`""` for a quote inside), and with a single quote before it
 * when it starts as a formula would, so a sheet shows it as text.
 */
const csvCell = (v: string | number) =>
  typeof v === "number" ? String(v) : `"${(FORMULA_START.test(v) ? `'${v}` : v).replace(/"/g, '""')}"`;

/**
 * Usage rows as CSV (a header, then one line per key and day; every usage field a column; text
 * cells made safe for a spreadsheet, see `csvCell`) or JSON lines (values as they are).
 */
export function renderUsage(rows: readonly UsageRow[], format: "csv" | "jsonl"): string {
  if (format === "jsonl")
    return rows
      .map(
        (r) =>
          `${JSON.stringify({ keyId: r.keyId, day: r.day, ...r.usage, costOfGoodsUsd: r.costOfGoodsUsd, chargeUsd: r.chargeUsd })}\n`,
      )
      .join("");
  const header = ["keyId", "day", ...FIELDS, "costOfGoodsUsd", "chargeUsd"].join(",");
  return [
    header,
    ...rows.map((r) =>
      [r.keyId, r.day, ...FIELDS.map((f) => r.usage[f]), r.costOfGoodsUsd, r.chargeUsd].map(csvCell).join(","),
    ),
  ]
    .join("\n")
    .concat("\n");
}
