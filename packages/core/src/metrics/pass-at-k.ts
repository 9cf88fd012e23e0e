/**
 * Unbiased Pass@k from n samples with c successes: 1 − C(n−c, k) / C(n, k).
 *
 * @example
 * passAtK(3, 1, 3); // 1
 * passAtK(6, 1, 3); // 0.5
 */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples, got ${n}`);
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}

/** Avg@k: the expected success of one attempt, estimated as c / n. */
export function avgAtK(n: number, c: number): number {
  return n === 0 ? 0 : c / n;
}

export interface PassAvg {
  passAt3: number;
  avgAt3: number;
}

/** Mean Pass@k and Avg@k over tasks, each given as its success flags. */
export function scoreTasks(successesPerTask: readonly (readonly boolean[])[], k = 3): PassAvg {
  if (successesPerTask.length === 0) return { passAt3: 0, avgAt3: 0 };
  let pass = 0;
  let avg = 0;
  for (const flags of successesPerTask) {
    const c = flags.filter(Boolean).length;
    pass += passAtK(flags.length, c, k);
    avg += avgAtK(flags.length, c);
  }
  return { passAt3: pass / successesPerTask.length, avgAt3: avg / successesPerTask.length };
}
