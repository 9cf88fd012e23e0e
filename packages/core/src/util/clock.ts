/** Time, injected so that core code never reads the wall clock directly. */
export interface Clock {
  now(): number;
  /**
   * Resolves after `ms` milliseconds, or at once when `signal` aborts (its timer cleared: nothing keeps the process
   * alive).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    }),
};

/** A clock that only moves when told to; `sleep` resolves when time passes its deadline. */
export class ManualClock implements Clock {
  private time: number;
  private waiters: { at: number; resolve: () => void }[] = [];

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ at: this.time + ms, resolve });
      this.flush();
    });
  }

  advance(ms: number): void {
    this.time += ms;
    this.flush();
  }

  private flush(): void {
    const due = this.waiters.filter((w) => w.at <= this.time);
    this.waiters = this.waiters.filter((w) => w.at > this.time);
    for (const w of due) w.resolve();
  }
}
