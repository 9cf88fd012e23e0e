// Builds the web console (console/src, Preact + htm + uPlot + marked + diff) into console/dist:
// one minified app.js, app.css (its own styles and uPlot's) and index.html, which the API serves
// at /console (functions/api/console.ts). Run by `npm install`/`npm ci` (prepare), by `npm test`
// before its checks, and by the console's browser test; about 0.2 s. console/dist is git-ignored.
//
//   node scripts/build-console.mjs
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "console");
const dist = join(root, "dist");
mkdirSync(dist, { recursive: true });
const started = performance.now();
await build({
  entryPoints: [join(root, "src", "main.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  outfile: join(dist, "app.js"),
  legalComments: "none",
  logLevel: "warning",
});
const uplotCss = readFileSync(fileURLToPath(import.meta.resolve("uplot/dist/uPlot.min.css")), "utf8");
writeFileSync(join(dist, "app.css"), `${uplotCss}\n${readFileSync(join(root, "style.css"), "utf8")}`);
copyFileSync(join(root, "index.html"), join(dist, "index.html"));
console.log(`console built into ${dist} in ${((performance.now() - started) / 1000).toFixed(2)} s`);
