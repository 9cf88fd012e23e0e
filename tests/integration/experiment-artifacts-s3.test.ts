import { randomUUID } from "node:crypto";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { startFauxqs, type FauxqsServer } from "fauxqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { StoreUnavailableError } from "@harness-s/core";
import { ARTIFACT_TYPES } from "@harness-s/core/experiment";
import { S3ExperimentArtifacts } from "@harness-s/adapters/stores";
import { localCredentials } from "@harness-s/adapters/local";
import { experimentArtifactsContract } from "../contract/experiment-artifacts.contract.ts";

// The S3 adapter against fauxqs's S3 (the real wire protocol on loopback, path-style addressing).
let fauxqs: FauxqsServer;
let s3: S3Client;
beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, host: "127.0.0.1", logger: false });
  s3 = new S3Client({
    endpoint: `http://127.0.0.1:${fauxqs.port}`,
    region: "us-east-1",
    credentials: localCredentials,
    forcePathStyle: true,
  });
});
afterAll(async () => {
  s3?.destroy();
  await fauxqs?.stop();
});

/** A bucket of its own per store: each test starts empty. */
async function freshBucket(): Promise<string> {
  const bucket = `reports-${randomUUID().slice(0, 8)}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  return bucket;
}

experimentArtifactsContract("S3 (fauxqs)", async () => new S3ExperimentArtifacts(s3, await freshBucket()));
experimentArtifactsContract(
  "S3 (fauxqs) under a prefix",
  async () => new S3ExperimentArtifacts(s3, await freshBucket(), "reports/"),
);

it("keeps the content type on the object, and a bucket that is not there is STORE_UNAVAILABLE", async () => {
  const store = new S3ExperimentArtifacts(s3, await freshBucket());
  await store.put("exp_t", "curves.png", new Uint8Array([0x89, 0x50, 0x4e, 0x47]), ARTIFACT_TYPES.png);
  expect((await store.get("exp_t", "curves.png"))?.contentType).toBe("image/png");
  const missing = new S3ExperimentArtifacts(s3, "no-such-bucket");
  await expect(missing.put("exp_t", "report.md", new Uint8Array([1]), ARTIFACT_TYPES.md)).rejects.toBeInstanceOf(
    StoreUnavailableError,
  );
  await expect(missing.list("exp_t")).rejects.toBeInstanceOf(StoreUnavailableError);
});
