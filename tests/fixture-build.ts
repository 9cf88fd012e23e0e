// @ts-expect-error: the bundler is plain JavaScript (packages/cli/bin), untyped
import { bundleSet } from "../packages/cli/bin/bundles.mjs";

/**
 * The processes the tests start from a TypeScript fixture, bundled as the CLI is (packages/cli/bin/bundles.mjs), so
 * that each start reads one file instead of loading the workspace through tsx's loader; remade when a source is newer.
 */
const fixtures: { current: () => Promise<string> } = bundleSet(
  ".harness-s/fixture-build",
  { "lambda-function-url": "tests/fixtures/lambda-function-url.ts" },
  "tests/fixture-build.ts",
);

/** The path of fixture `name`'s bundled entry (made first if its sources changed). */
export async function fixtureEntry(name: "lambda-function-url"): Promise<string> {
  return `${await fixtures.current()}/${name}.mjs`;
}
