import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import {
  ArtifactName,
  checkedArtifact,
  checkedExperimentId,
  contentTypeOf,
  type ArtifactContentType,
  type ExperimentArtifact,
  type ExperimentArtifacts,
} from "@harness-s/core/experiment";
import { aws } from "../../errors.ts";

/** The most artifacts one run lists (a report and a handful of plots; one page of ListObjectsV2). */
const MAX_LISTED = 1000;

/**
 * Reports and plots in an S3 bucket (the stacks' `Reports` bucket): `<experiment id>/<name>`
 * under `prefix`. Ids and names are checked against their schemas first; SDK errors become
 * STORE_UNAVAILABLE. The coordinator writes (linked with write access), the API reads.
 */
export class S3ExperimentArtifacts implements ExperimentArtifacts {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly prefix = "",
  ) {}

  private key(experimentId: string, name: string): string {
    return `${this.prefix}${experimentId}/${name}`;
  }

  async put(experimentId: string, name: string, bytes: Uint8Array, contentType: ArtifactContentType): Promise<void> {
    const k = checkedArtifact(experimentId, name, { bytes, contentType });
    await aws(`storing ${k.name} of ${k.experimentId}`, () =>
      this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(k.experimentId, k.name),
          Body: bytes,
          ContentType: contentType,
        }),
      ),
    );
  }

  async get(experimentId: string, name: string): Promise<ExperimentArtifact | undefined> {
    const k = checkedArtifact(experimentId, name);
    try {
      const out = await this.s3.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.key(k.experimentId, k.name) }),
      );
      const bytes = await out.Body!.transformToByteArray();
      return { name: k.name, contentType: contentTypeOf(k.name), bytes };
    } catch (err) {
      if ((err as { name?: string }).name === "NoSuchKey") return undefined;
      return aws(`reading ${k.name} of ${k.experimentId}`, () => Promise.reject(err));
    }
  }

  async list(experimentId: string): Promise<ArtifactName[]> {
    const folder = `${this.prefix}${checkedExperimentId(experimentId)}/`;
    const out = await aws(`listing the artifacts of ${experimentId}`, () =>
      this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: folder, Delimiter: "/", MaxKeys: MAX_LISTED }),
      ),
    );
    return (out.Contents ?? [])
      .map((o) => (o.Key ?? "").slice(folder.length))
      .filter((n) => ArtifactName.safeParse(n).success)
      .sort();
  }
}
