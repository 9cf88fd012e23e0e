/**
 * Seeded pseudo-random numbers. Every stochastic algorithm takes an {@link Rng}
 * so that runs are reproducible; `fork(label)` derives an independent stream
 * whose sequence depends only on the parent seed and the label.
 *
 * @example
 * const rng = createRng(7);
 * const batchRng = rng.fork("batch:3");
 * batchRng.int(10); // same value on every run with seed 7
 */
export interface Rng {
  readonly seed: number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** A new independent stream determined by this stream's seed and `label`. */
  fork(label: string | number): Rng;
}

/** 32-bit FNV-1a followed by a murmur finaliser; stable across platforms. */
export function hash32(text: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

class Sfc32 implements Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    this.a = hash32("a", seed);
    this.b = hash32("b", seed);
    this.c = hash32("c", seed);
    this.d = 1;
    for (let i = 0; i < 12; i++) this.next();
  }

  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) >>> 0;
    return t / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  fork(label: string | number): Rng {
    return new Sfc32(hash32(String(label), this.seed));
  }
}

/** Creates a seeded generator (sfc32). */
export function createRng(seed: number): Rng {
  return new Sfc32(seed >>> 0);
}

/** Fisher–Yates shuffle into a new array. */
export function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Picks `n` distinct items uniformly (all of them when n ≥ length). */
export function sample<T>(items: readonly T[], n: number, rng: Rng): T[] {
  return shuffled(items, rng).slice(0, Math.max(0, n));
}
