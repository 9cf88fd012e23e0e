export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0;
}

/** Sample standard deviation (n − 1). */
export function sampleStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

/** Average ranks (1-based), ties sharing the mean rank. */
export function ranks(xs: readonly number[]): number[] {
  const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length);
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j++;
    for (let t = i; t <= j; t++) out[order[t]![1]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return out;
}

/** Spearman rank correlation; 0 when either side is constant. */
export function spearman(a: readonly number[], b: readonly number[]): number {
  const r = pearson(ranks(a), ranks(b));
  return Number.isNaN(r) ? 0 : r;
}

/** Pearson's correlation of paired values; NaN when either side does not vary. */
export function pearson(a: readonly number[], b: readonly number[]): number {
  const ma = mean(a);
  const mb = mean(b);
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - ma) * (b[i]! - mb);
    da += (a[i]! - ma) ** 2;
    db += (b[i]! - mb) ** 2;
  }
  return da === 0 || db === 0 ? Number.NaN : num / Math.sqrt(da * db);
}

export function jaccard<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): number {
  const union = new Set([...a, ...b]).size;
  if (union === 0) return 0;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / union;
}

/** Two-sided 97.5% quantiles of Student's t for 1–30 degrees of freedom. */
const T975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** Student's t 0.975 quantile: exact table to 30 degrees of freedom, a Cornish–Fisher expansion beyond. */
export function tQuantile975(df: number): number {
  if (df < 1) return Number.POSITIVE_INFINITY;
  if (df <= 30) return T975[Math.floor(df) - 1]!;
  const z = 1.959964;
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2);
}

/** 95% t confidence interval of the mean; unbounded with fewer than two values. */
export function meanCi95(xs: readonly number[]): [number, number] {
  if (xs.length < 2) return [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
  const half = (tQuantile975(xs.length - 1) * sampleStd(xs)) / Math.sqrt(xs.length);
  return [mean(xs) - half, mean(xs) + half];
}

/**
 * Exact two-sided sign test: the chance of a split at least this uneven between `wins` and
 * `losses` if each were a fair coin (ties are left out before calling).
 *
 * @example
 * signTestP(5, 0); // 0.0625
 */
export function signTestP(wins: number, losses: number): number {
  const n = wins + losses;
  if (n === 0) return 1;
  const k = Math.min(wins, losses);
  let tail = 0;
  let c = 1; // C(n, 0)
  for (let i = 0; i <= k; i++) {
    tail += c;
    c = (c * (n - i)) / (i + 1);
  }
  return Math.min(1, (2 * tail) / 2 ** n);
}

/**
 * Paired differences summary: mean, sample std, how many pairs are positive, the 95% t interval
 * of the mean and the sign test's p (ties left out).
 *
 * @example
 * pairedSummary([0.1, 0.2, -0.05]); // { mean: 0.083, std: 0.126, wins: 2, n: 3, ci95: [-0.23, 0.4], signP: 1 }
 */
export function pairedSummary(diffs: readonly number[]): {
  mean: number;
  std: number;
  wins: number;
  n: number;
  ci95: [number, number];
  signP: number;
} {
  const wins = diffs.filter((d) => d > 0).length;
  const losses = diffs.filter((d) => d < 0).length;
  return {
    mean: mean(diffs),
    std: sampleStd(diffs),
    wins,
    n: diffs.length,
    ci95: meanCi95(diffs),
    signP: signTestP(wins, losses),
  };
}
