import { z } from "zod";
import { PoolHarm } from "@harness-s/core/evolution";
import { mean } from "@harness-s/core/metrics";
import { pts } from "./stats.ts";

/** What `pools.json` keeps per seed: the frozen pool and each sibling's side effects on dev. */
export const SeedPoolRecord = z.looseObject({
  siblings: z.array(z.looseObject({ id: z.string(), provenance: z.looseObject({ direction: z.string() }) })),
  harm: PoolHarm.optional(),
});
export type SeedPoolRecord = z.infer<typeof SeedPoolRecord>;
export const PoolsFile = z.record(z.string(), SeedPoolRecord);
export type PoolsFile = z.infer<typeof PoolsFile>;

/**
 * Per repair direction over every seed's pool: how many siblings, their mean harm rate (share of
 * the dev tasks H0 solves that the sibling fails), mean success lost there, and the share of
 * siblings that break at least one such task.
 */
export function renderHarm(pools: PoolsFile): string[] {
  const rows = Object.values(pools).flatMap((p) =>
    p.harm
      ? p.siblings
          .map((s) => ({ direction: s.provenance.direction, ...p.harm!.siblings[s.id]! }))
          .filter((r) => r.harmRate !== undefined)
      : [],
  );
  if (!rows.length) return [];
  const solved = mean(Object.values(pools).flatMap((p) => (p.harm ? [p.harm.h0Solved] : [])));
  const out = [
    "## Side effects of the siblings (harm on dev)",
    "",
    `Harm rate: of the dev tasks H0 solves (success rate ≥ 0.5 under the initial policy; ${solved.toFixed(1)} per seed on average), the share a sibling fails (its rate lower by ≥ 0.5). Success lost: the mean drop of its success rate on those tasks. Per-sibling values are in pools.json (\`harm\`).`,
    "",
    "| direction | siblings (all seeds) | mean harm rate | max | success lost | siblings that break ≥ 1 task |",
    "|---|---|---|---|---|---|",
  ];
  const directions = [...new Set(rows.map((r) => r.direction))].sort();
  for (const d of [...directions, "all"]) {
    const xs = d === "all" ? rows : rows.filter((r) => r.direction === d);
    out.push(
      `| ${d} | ${xs.length} | ${pts(mean(xs.map((x) => x.harmRate)))} | ${pts(Math.max(...xs.map((x) => x.harmRate)))} | ${pts(mean(xs.map((x) => x.successLost)))} | ${pts(xs.filter((x) => x.broken.length > 0).length / xs.length)} |`,
    );
  }
  out.push("");
  return out;
}
