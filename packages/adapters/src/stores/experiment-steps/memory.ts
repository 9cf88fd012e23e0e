import { selectSteps, type ExperimentStep, type ExperimentStepStore } from "@harness-s/core/experiment";
import { frozenCopy } from "../frozen-copy.ts";

export class MemoryExperimentStepStore implements ExperimentStepStore {
  private readonly steps = new Map<string, ExperimentStep>();

  async put(step: ExperimentStep): Promise<void> {
    const key = `${step.experimentId}\u0000${step.seed}\u0000${step.arm}\u0000${step.step}`;
    if (!this.steps.has(key)) this.steps.set(key, frozenCopy(step));
  }

  async list(experimentId: string, filter: { arm?: string; seed?: number } = {}): Promise<ExperimentStep[]> {
    return selectSteps(
      [...this.steps.values()].filter((s) => s.experimentId === experimentId),
      filter,
    );
  }
}
