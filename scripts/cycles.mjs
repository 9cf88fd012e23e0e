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
  "packages/adapters/src/*/index.ts",
  "packages/envs/src/index.ts",
  "packages/dbbench/src/index.ts",
  "packages/policy/src/index.ts",
  "packages/cli/src/main.ts",
  "functions/**/*.ts",
  "stacks/*.ts",
  "sst.config.ts",
];
const PY_PACKAGES = [
  "packages/policy-worker/harness_s_worker",
  "packages/envs/fixtures/common",
  "packages/envs/fixtures/appworld",
  "packages/envs/fixtures/swe",
];

let failed = false;
try {
  execFileSync(
    "npx",
    ["dpdm", "--no-warning", "--no-tree", "--no-progress", "--exit-code", "circular:1", ...TS_ENTRIES],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
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

/**
 * Core's contexts as one graph: each folder of packages/core/src is a context (the kernel's folders
 * harness/, rollout/ and util/ and its root files are one, the kernel), an edge each relative import
 * from one context into another. A circle there is a loop between contexts even when no two files
 * import each other.
 */
const CORE = "packages/core/src";
const KERNEL = new Set(["harness", "rollout", "util"]);
function contextGraph() {
  const contextOf = (rel) => {
    const head = rel.includes("/") ? rel.split("/")[0] : "(kernel)";
    return KERNEL.has(head) ? "(kernel)" : head;
  };
  const graph = new Map();
  const walk = (dir) => {
    for (const entry of readdirSync(join(CORE, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith(".ts")) {
        const from = contextOf(rel);
        if (!graph.has(from)) graph.set(from, new Set());
        for (const [, spec] of readFileSync(join(CORE, rel), "utf8").matchAll(/from\s+"(\.[^"]+)"/g)) {
          const target = join(dir, spec).replace(/\\/g, "/");
          const to = contextOf(target);
          if (to !== from) graph.get(from).add(to);
        }
      }
    }
  };
  walk("");
  return new Map([...graph].map(([k, v]) => [k, [...v]]));
}

for (const c of circles(contextGraph())) {
  console.log(`${CORE} contexts: ${c}`);
  failed = true;
}

for (const dir of PY_PACKAGES) {
  for (const c of circles(pythonGraph(dir))) {
    console.log(`${dir}: ${c}`);
    failed = true;
  }
}
console.log(
  failed
    ? "cycles: circular imports found"
    : `cycles: none in ${TS_ENTRIES.length} TypeScript entry globs, core's contexts and ${PY_PACKAGES.length} Python packages`,
);
process.exit(failed ? 1 : 0);
