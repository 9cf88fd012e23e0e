// @ts-expect-error: the launcher's builder is plain JavaScript (packages/cli/bin), untyped
import { currentCliBuild } from "../packages/cli/bin/build.mjs";

// The files that start the CLI start it from its build (packages/cli/bin/harness-s.js): made here, before any of
// them runs, if a source file is newer than the build (`npm test` makes it first; a `vitest run` alone finds it here).
export default async function setup() {
  await currentCliBuild();
}
