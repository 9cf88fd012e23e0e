import {
  checkedArtifact,
  checkedExperimentId,
  type ArtifactContentType,
  type ArtifactName,
  type ExperimentArtifact,
  type ExperimentArtifacts,
} from "@harness-s/core/experiment";

/** Reports and plots in memory (the API's tests, one-process stacks); reads are copies. */
export class MemoryExperimentArtifacts implements ExperimentArtifacts {
  private readonly files = new Map<string, Map<ArtifactName, ExperimentArtifact>>();

  async put(experimentId: string, name: string, bytes: Uint8Array, contentType: ArtifactContentType): Promise<void> {
    const key = checkedArtifact(experimentId, name, { bytes, contentType });
    const run = this.files.get(key.experimentId) ?? new Map<ArtifactName, ExperimentArtifact>();
    run.set(key.name, { name: key.name, contentType, bytes: new Uint8Array(bytes) });
    this.files.set(key.experimentId, run);
  }

  async get(experimentId: string, name: string): Promise<ExperimentArtifact | undefined> {
    const key = checkedArtifact(experimentId, name);
    const found = this.files.get(key.experimentId)?.get(key.name);
    return found && { ...found, bytes: new Uint8Array(found.bytes) };
  }

  async list(experimentId: string): Promise<ArtifactName[]> {
    return [...(this.files.get(checkedExperimentId(experimentId))?.keys() ?? [])].sort();
  }
}
