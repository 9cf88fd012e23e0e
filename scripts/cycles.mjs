// Import circles, in both languages: dpdm over every TypeScript entry point (packages, functions,
// the CLI, the stacks), and the Python worker's and fixture servers' relative imports read from
// their source (every `from .x import` / `from . import x`, at module level, in functions and
// under TYPE_CHECKING alike: a circle a lazy import hides is still a circle). Exit 1 on any.
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";

const TS_ENTRIES = [
  "packages/core/src/index.ts",
  "packages/core/src/*/index.ts",
  "packages/adapters/src/index.ts",
  "packages/envs/src/index.ts",
  "packages/dbbench/src/index.ts",
  "packages/policy/src/index.ts",
  "packages/cli/src/main.ts",
  "functions/**/*.ts",
  "stacks/*.ts",
  "sst.config.ts",
];
const PY_PACKAGES = ["packages/policy-worker/harness_s_worker", "packages/envs/fixtures/common", "packages/envs/fixtures/appworld", "packages/envs/fixtures/swe"];

let failed = false;
try {
  execFileSync("npx", ["dpdm", "--no-warning", "--no-tree", "--no-progress", "--exit-code", "circular:1", ...TS_ENTRIES], { stdio: ["ignore", "pipe", "pipe"] });
} catch (err) {
  process.stdout.write(String(err.stdout ?? ""));
  failed = true;
}

/** Each module's relative imports within its package. */
function pythonGraph(dir) {
  const modules = readdirSync(dir)
    .filter((f) => f.endsWith(".py"))
    .map((f) => basename(f, ".py"));
  const graph = new Map();
  for (const m of modules) {
    const src = readFileSync(join(dir, `${m}.py`), "utf8");
    const targets = new Set();
    for (const [, from, names] of src.matchAll(/^\s*from \.([\w]*) import \(?([^)\n]+)/gm)) {
      if (from) targets.add(from);
      else for (const n of names.split(",").map((s) => s.trim().split(" ")[0])) if (modules.includes(n)) targets.add(n);
    }
    graph.set(
      m,
      [...targets].filter((t) => modules.includes(t) && t !== m),
    );
  }
  return graph;
}

/** The circles of a graph, each once (from its smallest name). */
function circles(graph) {
  const found = new Set();
  const walk = (start, node, path) => {
    for (const next of graph.get(node) ?? []) {
      if (next === start) found.add([...path].sort()[0] === start ? path.join(" -> ") : "");
      else if (!path.includes(next) && next > start) walk(start, next, [...path, next]);
    }
  };
  for (const m of graph.keys()) walk(m, m, [m]);
  found.delete("");
  return [...found];
}

for (const dir of PY_PACKAGES) {
  for (const c of circles(pythonGraph(dir))) {
    console.log(`${dir}: ${c}`);
    failed = true;
  }
}
console.log(failed ? "cycles: circular imports found" : `cycles: none in ${TS_ENTRIES.length} TypeScript entry globs and ${PY_PACKAGES.length} Python packages`);
process.exit(failed ? 1 : 0);
