/**
 * The bucket of finished experiments' reports and plots (`<experiment id>/report.md`, `…/<plot>.png`),
 * private. The coordinator, which writes them, links the bucket itself; the API, which only reads
 * them, links `ReportsRead`: the bucket's name with s3:GetObject and s3:ListBucket and nothing else.
 */
export function reportStorage() {
  const bucket = new sst.aws.Bucket("Reports", { cors: false });
  const read = new sst.Linkable("ReportsRead", {
    properties: { name: bucket.name },
    include: [
      sst.aws.permission({
        actions: ["s3:GetObject", "s3:ListBucket"],
        resources: [bucket.arn, $interpolate`${bucket.arn}/*`],
      }),
    ],
  });
  return { bucket, read };
}
