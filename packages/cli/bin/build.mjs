// The CLI's build: its entry and the bodies of the threads and processes it starts, each bundled by esbuild into
// one JavaScript file (the workspace's TypeScript and the plain-JavaScript packages every start loads inlined, the
// rest imported as they are), in a folder of its own under packages/cli/dist/. A process started from the build
// reads one file per isolate instead of hundreds of modules through tsx's loader thread (measured on the 2-core dev
// machine, user + system CPU: `harness-s --help` 1.1-1.5 -> 0.6-0.7 s; `serve` until it listens 7.8 -> 3.7 s;
// docs/testing.md). The launcher (harness-s.js) makes the build when a source file it holds is newer than it, so a
// build is never behind its source.
//
//   node packages/cli/bin/build.mjs     builds if anything changed, prints the folder
import { relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { bundleSet } from "./bundles.mjs";

/**
 * The entries, by the name each gets in the build. A thread's or process's entry (its body) is named as the source
 * `.mjs` that starts it, so the `new URL("./<name>.mjs", import.meta.url)` in a built file finds the built one beside
 * it; the source `.mjs`, started from source, runs the built body too when the build is current (`builtEntry`).
 */
const ENTRIES = {
  main: "packages/cli/src/main.ts",
  "instance-worker": "packages/envs/src/embedded/instance-worker.ts",
  "fauxqs-thread": "functions/local/fauxqs-thread-body.ts",
  "serve-workers-thread": "packages/cli/src/runtime/serve-workers-thread.ts",
  "serve-worker-process": "packages/cli/src/runtime/serve-worker-process.ts",
};
const cli = bundleSet("packages/cli/dist", ENTRIES, "packages/cli/bin/build.mjs");

/** The URL of a thread's or process's body in a CLI build as new as its sources, else undefined. */
export const builtEntry = (name) => cli.builtEntry(name);

/**
 * Runs a thread's or process's body: the build's copy when the build is as new as its sources, else `source` (the
 * body's TypeScript, a URL) through tsx's loader, registered here. The source entries (`*.mjs`) each make one call.
 */
export async function runBody(name, source) {
  const built = cli.builtEntry(name);
  if (built) return import(built);
  (await import("tsx/esm/api")).register();
  return import(source);
}

/** The folder of a CLI build as new as its sources, made first if there is none. */
export const currentCliBuild = () => cli.current();

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const t0 = performance.now();
  const dir = await currentCliBuild();
  const root = fileURLToPath(new URL("../../../", import.meta.url));
  console.log(`the CLI's build: ${relative(root, dir)} (${((performance.now() - t0) / 1000).toFixed(2)} s)`);
}
