// The CLI's build: its entry and the bodies of the threads and processes it starts, each bundled by esbuild into
// one JavaScript file (the workspace's TypeScript and the plain-JavaScript packages every start loads inlined, the
// rest imported as they are), in a folder of its own under packages/cli/dist/. A process started from the build
// reads one file per isolate instead of hundreds of modules through tsx's loader thread (measured on the 2-core dev
// machine, user + system CPU: `harness-s --help` 1.1-1.5 -> 0.6-0.7 s; `serve` until it listens 7.8 -> 3.7 s;
// docs/testing.md). The launcher (harness-s.js) makes the build when a source file it holds is newer than it, so a
// build is never behind its source.
//
//   node packages/cli/bin/build.mjs     builds if anything changed, prints the folder
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DIST = join(ROOT, "packages/cli/dist");
const CURRENT = join(DIST, "current.json");
/** A build older than this, not the current one, is removed when a new one is made (a process may still run it). */
const KEEP_OLD_MS = 24 * 3600_000;

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
const STARTED_ENTRY = new RegExp(
  String.raw`new URL\(\s*"\./(${Object.keys(ENTRIES).join("|")})\.mjs",\s*import\.meta\.url\s*\)`,
  "g",
);

/**
 * The packages inlined in the build: the workspace's, and plain-JavaScript ones every start loads (a bundled file
 * loads in one read; through Node's loader the AWS SDK alone is some hundreds of files). The rest stay imports:
 * native addons, packages that find files beside their own (DynamoDB Local's launcher, fauxqs), and those loaded
 * late (Vega, mysql2).
 */
const INLINED =
  /^(@harness-s\/|@aws-sdk\/|@smithy\/|@aws-crypto\/|@aws\/|zod(\/|$)|hono(\/|$)|@hono\/|commander$|openai(\/|$))/;

/** The current build's folder if every source it was made from is as old as it, else undefined. */
function upToDate() {
  if (!existsSync(CURRENT)) return undefined;
  const current = JSON.parse(readFileSync(CURRENT, "utf8"));
  const dir = join(DIST, current.dir);
  if (!existsSync(join(dir, "main.mjs"))) return undefined;
  for (const input of current.inputs) {
    const mtime = statSync(join(ROOT, input), { throwIfNoEntry: false })?.mtimeMs;
    if (mtime === undefined || mtime > current.builtAt) return undefined;
  }
  return dir;
}

/**
 * Source files keep their own location: `import.meta.url` in a workspace file reads as that file's URL (found from
 * the built file's own, so the checkout may move), except where it starts one of the built entries.
 */
const sourceLocations = (dir) => ({
  name: "source-locations",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (INLINED.test(args.path) ? undefined : { external: true }));
    build.onLoad({ filter: /\.(ts|mjs)$/ }, (args) => {
      if (args.path.includes("/node_modules/")) return undefined;
      const own = JSON.stringify(relative(dir, args.path));
      const text = readFileSync(args.path, "utf8")
        .replace(STARTED_ENTRY, (m) => m.replace("import.meta.url", "import.meta.__built"))
        .replaceAll("import.meta.url", `new URL(${own}, import.meta.url).href`)
        .replaceAll("import.meta.__built", "import.meta.url");
      return { contents: text, loader: args.path.endsWith(".ts") ? "ts" : "js", resolveDir: dirname(args.path) };
    });
  },
});

async function build() {
  const { build: esbuild } = await import("esbuild");
  const name = `build-${Date.now()}-${process.pid}`;
  const dir = join(DIST, name);
  const builtAt = Date.now();
  const result = await esbuild({
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([n, p]) => [n, join(ROOT, p)])),
    absWorkingDir: ROOT,
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    metafile: true,
    // Names as the source gives them (tsx keeps them too): a class's or function's `name` may be read (errors' names).
    keepNames: true,
    logLevel: "warning",
    plugins: [sourceLocations(dir)],
    // CommonJS inlined in an ES module finds `require` here (the AWS SDK requires Node's modules).
    banner: {
      js: 'import { createRequire as __hsRequire } from "node:module"; const require = __hsRequire(import.meta.url);',
    },
  });
  // The builder itself and the lock file too: a build option or an inlined package's version changes the build.
  const inputs = ["packages/cli/bin/build.mjs", "package-lock.json", ...Object.keys(result.metafile.inputs)].filter(
    (p) => !p.includes("node_modules"),
  );
  const pointer = `${CURRENT}.${process.pid}`;
  writeFileSync(pointer, JSON.stringify({ dir: name, builtAt, inputs }));
  renameSync(pointer, CURRENT); // atomic: a launcher reads the old build's pointer or the new one
  for (const old of readdirSync(DIST))
    if (old.startsWith("build-") && old !== name && Date.now() - statSync(join(DIST, old)).mtimeMs > KEEP_OLD_MS)
      rmSync(join(DIST, old), { recursive: true, force: true });
  return dir;
}

/**
 * The URL of entry `name` in a build as new as its sources, else undefined (nothing is built here). A thread's or
 * process's source entry runs it when there is one, instead of registering tsx's loader (about 1 CPU s a start).
 */
export function builtEntry(name) {
  const dir = existsSync(DIST) ? upToDate() : undefined;
  return dir ? pathToFileURL(join(dir, `${name}.mjs`)).href : undefined;
}

/** The folder of a build as new as its sources, made first if there is none. */
export async function currentCliBuild() {
  mkdirSync(DIST, { recursive: true });
  return upToDate() ?? (await build());
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const t0 = performance.now();
  const dir = await currentCliBuild();
  console.log(`the CLI's build: ${relative(ROOT, dir)} (${((performance.now() - t0) / 1000).toFixed(2)} s)`);
}
