/** Lazy Adam: only parameters with a gradient in this step move (sparse features). */
export class Adam {
  private readonly m = new Map<string, number>();
  private readonly v = new Map<string, number>();
  private readonly t = new Map<string, number>();

  constructor(
    private readonly beta1 = 0.9,
    private readonly beta2 = 0.999,
    private readonly epsilon = 1e-8,
  ) {}

  /** Applies one descent step of `grad` (d loss / d weight) to `weights` in place. */
  step(weights: Map<string, number>, grad: ReadonlyMap<string, number>, lr: number): void {
    for (const [key, g] of grad) {
      if (g === 0) continue;
      const m = this.beta1 * (this.m.get(key) ?? 0) + (1 - this.beta1) * g;
      const v = this.beta2 * (this.v.get(key) ?? 0) + (1 - this.beta2) * g * g;
      const t = (this.t.get(key) ?? 0) + 1;
      this.m.set(key, m);
      this.v.set(key, v);
      this.t.set(key, t);
      const mHat = m / (1 - this.beta1 ** t);
      const vHat = v / (1 - this.beta2 ** t);
      weights.set(key, (weights.get(key) ?? 0) - (lr * mHat) / (Math.sqrt(vHat) + this.epsilon));
    }
  }
}
