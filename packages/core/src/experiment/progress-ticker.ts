import type { ExperimentRecord } from "./records.ts";

/** How often a running attempt writes the rollouts it has run so far (once they changed). */
export const EXPERIMENT_PROGRESS_MS = 2_000;

/** What an attempt is doing: each phase's label says it, with the rollouts so far. */
export const PROGRESS_PHASES = {
  preparing: "running: preparing the environment and its pool",
  evolving: "running: evolving its pool first on the dev split",
  evaluating: "running: evaluating before training",
  training: "running: training",
} as const;
export type ProgressPhase = keyof typeof PROGRESS_PHASES;

/**
 * While an attempt runs, every {@link EXPERIMENT_PROGRESS_MS} its record's rollouts finished so far (`progress.rollouts`,
 * `rolloutFinished`: the count every long step moves, the evolution first, each evaluation, each training step)
 * are written with its phase, once they changed: a reader sees the count move every few seconds, never a label that
 * stands still while rollouts run.
 */
export class ProgressTicker {
  private phase: ProgressPhase | undefined;
  private detail = "";
  private written = -1;
  private stopped = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly record: ExperimentRecord,
    private readonly save: (patch: Partial<ExperimentRecord>) => Promise<void>,
    private readonly onFailure: (err: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.tick(), EXPERIMENT_PROGRESS_MS);
    this.timer.unref?.();
  }

  /** Enters `phase` (a training step's `detail`: which seed, arm and step) and writes it now. */
  enter(phase: ProgressPhase, detail = "", extra: Partial<ExperimentRecord["progress"]> = {}): Promise<void> {
    this.phase = phase;
    this.detail = detail;
    return this.write(extra);
  }

  /** The label the record shows now (an attempt that resumed keeps its own until its first step). */
  label(): string {
    if (this.phase === undefined) return this.record.progress.label;
    const rollouts = this.finished();
    const what = this.phase === "training" && this.detail ? `running: ${this.detail}` : PROGRESS_PHASES[this.phase!];
    return `${what} (${rollouts} rollout${rollouts === 1 ? "" : "s"} so far)`;
  }

  private write(extra: Partial<ExperimentRecord["progress"]> = {}): Promise<void> {
    this.written = this.finished();
    return this.save({ progress: { ...this.record.progress, ...extra, label: this.label() } });
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.finished() === this.written) return;
    await this.write().catch(this.onFailure);
  }

  private finished(): number {
    return this.record.progress.rollouts ?? 0;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
