import { mkdir, readFile, readdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  ArtifactName,
  checkedArtifact,
  checkedExperimentId,
  contentTypeOf,
  type ArtifactContentType,
  type ExperimentArtifact,
  type ExperimentArtifacts,
} from "@harness-s/core/experiment";

const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT";

/**
 * Reports and plots as files under `root` (`harness-s serve`: a folder of the stack's own):
 * `<root>/<experiment id>/<name>`. Ids and names are checked against their schemas first, so a
 * path never leaves its run's folder; a write lands whole (a temporary file renamed over it).
 */
export class FolderExperimentArtifacts implements ExperimentArtifacts {
  constructor(private readonly root: string) {}

  async put(experimentId: string, name: string, bytes: Uint8Array, contentType: ArtifactContentType): Promise<void> {
    const key = checkedArtifact(experimentId, name, { bytes, contentType });
    const dir = join(this.root, key.experimentId);
    await mkdir(dir, { recursive: true });
    const partial = join(dir, `.${key.name}.${process.pid}.${Date.now()}.partial`);
    await writeFile(partial, bytes);
    await rename(partial, join(dir, key.name));
  }

  async get(experimentId: string, name: string): Promise<ExperimentArtifact | undefined> {
    const key = checkedArtifact(experimentId, name);
    try {
      const bytes = await readFile(join(this.root, key.experimentId, key.name));
      return { name: key.name, contentType: contentTypeOf(key.name), bytes: new Uint8Array(bytes) };
    } catch (err) {
      if (missing(err)) return undefined;
      throw err;
    }
  }

  async list(experimentId: string): Promise<ArtifactName[]> {
    const id = checkedExperimentId(experimentId);
    try {
      // Only names an artifact may have: a write's temporary file is not one.
      return (await readdir(join(this.root, id))).filter((n) => ArtifactName.safeParse(n).success).sort();
    } catch (err) {
      if (missing(err)) return [];
      throw err;
    }
  }
}
