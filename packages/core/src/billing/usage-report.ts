import { ForbiddenError } from "../errors.ts";
import { chargeUsd, costOfGoods, roundUsd, type PriceList, type Prices, type UsagePeriod } from "./cost-of-goods.ts";
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

/** What a key has spent of each of its limits, and what is left (null: no such limit). */
export interface LimitsLeft {
  spentUsd: number;
  leftUsd: number | null;
  costOfGoodsUsd: number;
  requestsLeft: number | null;
}

/**
 * A key's limits as spent so far: its charge at the tariff against its USD budget, its requests against its quota, and
 * what its usage cost in goods (issue 70 item 2: the usage page shows spent and left of each limit).
 *
 * @example
 * limitsLeft({ rollouts: 10 }, { budgetUsd: 1 }, { tariff, priceList }).leftUsd; // 1 - the charge of 10 rollouts
 */
export function limitsLeft(
  usage: Partial<Usage>,
  key: { budgetUsd?: number | undefined; requestQuota?: number | undefined },
  prices: { tariff: Prices; priceList: PriceList },
): LimitsLeft {
  const spentUsd = chargeUsd(usage, prices.tariff);
  return {
    spentUsd,
    leftUsd: key.budgetUsd === undefined ? null : Math.max(0, roundUsd(key.budgetUsd - spentUsd)),
    costOfGoodsUsd: costOfGoods(usage, prices.priceList).totalUsd,
    requestsLeft: key.requestQuota === undefined ? null : Math.max(0, key.requestQuota - (usage.requests ?? 0)),
  };
}
