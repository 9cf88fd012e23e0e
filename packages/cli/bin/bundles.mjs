// Entries bundled by esbuild, each into one JavaScript file (the workspace's TypeScript and the plain-JavaScript
// packages every start loads inlined, the rest imported as they are), in a folder of their own per build; a build is
// remade when a source file it holds is newer. The CLI's set is packages/cli/bin/build.mjs; the tests bundle their
// fixture processes with it too (tests/fixture-build.ts).
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** A build older than this, not the current one, is removed when a new one is made (a process may still run it). */
const KEEP_OLD_MS = 24 * 3600_000;

/**
 * The packages inlined in the build: the workspace's, and plain-JavaScript ones every start loads (a bundled file
 * loads in one read; through Node's loader the AWS SDK alone is some hundreds of files). The rest stay imports:
 * native addons, packages that find files beside their own (DynamoDB Local's launcher, fauxqs), and those loaded
 * late (Vega, mysql2).
 */
const INLINED =
  /^(@harness-s\/|@aws-sdk\/|@smithy\/|@aws-crypto\/|@aws\/|zod(\/|$)|hono(\/|$)|@hono\/|commander$|openai(\/|$))/;

/** The current build's folder if every source it was made from is as old as it, else undefined. */
function upToDate(dist, pointerFile) {
  if (!existsSync(pointerFile)) return undefined;
  const current = JSON.parse(readFileSync(pointerFile, "utf8"));
  const dir = join(dist, current.dir);
  if (!existsSync(dir)) return undefined;
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
const sourceLocations = (dir, startedEntry) => ({
  name: "source-locations",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (INLINED.test(args.path) ? undefined : { external: true }));
    build.onLoad({ filter: /\.(ts|mjs)$/ }, (args) => {
      if (args.path.includes("/node_modules/")) return undefined;
      const own = JSON.stringify(relative(dir, args.path));
      const text = readFileSync(args.path, "utf8")
        .replace(startedEntry, (m) => m.replace("import.meta.url", "import.meta.__built"))
        .replaceAll("import.meta.url", `new URL(${own}, import.meta.url).href`)
        .replaceAll("import.meta.__built", "import.meta.url");
      return { contents: text, loader: args.path.endsWith(".ts") ? "ts" : "js", resolveDir: dirname(args.path) };
    });
  },
});

async function build(dist, pointerFile, entries, startedEntry, definedIn) {
  const { build: esbuild } = await import("esbuild");
  const name = `build-${Date.now()}-${process.pid}`;
  const dir = join(dist, name);
  const builtAt = Date.now();
  const result = await esbuild({
    entryPoints: Object.fromEntries(Object.entries(entries).map(([n, p]) => [n, join(ROOT, p)])),
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
    plugins: [sourceLocations(dir, startedEntry)],
    // CommonJS inlined in an ES module finds `require` here (the AWS SDK requires Node's modules).
    banner: {
      js: 'import { createRequire as __hsRequire } from "node:module"; const require = __hsRequire(import.meta.url);',
    },
  });
  // The builder, the set's definition and the lock file too: an option or an inlined package's version changes it.
  const own = ["packages/cli/bin/bundles.mjs", definedIn, "package-lock.json"];
  const inputs = [...own, ...Object.keys(result.metafile.inputs)].filter((p) => !p.includes("node_modules"));
  const pointer = `${pointerFile}.${process.pid}`;
  writeFileSync(pointer, JSON.stringify({ dir: name, builtAt, inputs }));
  renameSync(pointer, pointerFile); // atomic: a launcher reads the old build's pointer or the new one
  for (const old of readdirSync(dist))
    if (old.startsWith("build-") && old !== name && Date.now() - statSync(join(dist, old)).mtimeMs > KEEP_OLD_MS)
      rmSync(join(dist, old), { recursive: true, force: true });
  return dir;
}

/**
 * A set of entries bundled together, in folders of their own under `dist` (relative to the checkout), each entry by
 * the name it gets there. `definedIn` is the file that defines the set (a change to it remakes the build).
 *
 * @example
 * const set = bundleSet("packages/cli/dist", { main: "packages/cli/src/main.ts" }, "packages/cli/bin/build.mjs");
 * await import(`${await set.current()}/main.mjs`);
 */
export function bundleSet(dist, entries, definedIn) {
  const distDir = join(ROOT, dist);
  const pointerFile = join(distDir, "current.json");
  const startedEntry = new RegExp(
    String.raw`new URL\(\s*"\./(${Object.keys(entries).join("|")})\.mjs",\s*import\.meta\.url\s*\)`,
    "g",
  );
  return {
    /**
     * The URL of entry `name` in a build as new as its sources, else undefined (nothing is built here). A thread's or
     * process's source entry runs it when there is one, instead of registering tsx's loader (about 1 CPU s a start).
     */
    builtEntry(name) {
      const dir = existsSync(distDir) ? upToDate(distDir, pointerFile) : undefined;
      return dir ? pathToFileURL(join(dir, `${name}.mjs`)).href : undefined;
    },
    /** The folder of a build as new as its sources, made first if there is none. */
    async current() {
      mkdirSync(distDir, { recursive: true });
      return upToDate(distDir, pointerFile) ?? (await build(distDir, pointerFile, entries, startedEntry, definedIn));
    },
  };
}
