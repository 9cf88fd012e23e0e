import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import type { Reporter } from "vitest/node";

/** Where a run's per-file CPU lines go (tests/cpu-meter.ts writes them), and the table's markers in docs/testing.md. */
export const TEST_CPU = {
  lines: ".harness-s/test-cpu.jsonl",
  begin: "<!-- test-cpu:begin -->",
  end: "<!-- test-cpu:end -->",
} as const;

/**
 * Per-file CPU seconds of a run: the ten costliest printed when the run ends, and, with
 * HARNESS_S_TEST_CPU_DOC set to a markdown file (`npm run test:cpu`), the whole table written
 * between its markers there.
 */
export default class CpuReporter implements Reporter {
  /** A run starts its lines afresh (the forks append to them; they inherit the variable). */
  onInit(): void {
    process.env.HARNESS_S_TEST_CPU ??= TEST_CPU.lines;
    mkdirSync(dirname(process.env.HARNESS_S_TEST_CPU), { recursive: true });
    writeFileSync(process.env.HARNESS_S_TEST_CPU, "");
  }

  onTestRunEnd(): void {
    const lines = process.env.HARNESS_S_TEST_CPU;
    if (!lines || !existsSync(lines)) return;
    const byFile = new Map<string, number>();
    for (const line of readFileSync(lines, "utf8").split("\n").filter(Boolean)) {
      const { file, cpuSeconds } = JSON.parse(line) as { file: string; cpuSeconds: number };
      const name = relative(process.cwd(), file);
      byFile.set(name, (byFile.get(name) ?? 0) + cpuSeconds);
    }
    const rows = [...byFile].sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((n, [, s]) => n + s, 0);
    console.log(
      `\ntest CPU: ${total.toFixed(0)} s in ${rows.length} files (their forks and the children they ended), ${mainSeconds().toFixed(0)} s in vitest's own process; the costliest:`,
    );
    for (const [f, s] of rows.slice(0, 10)) console.log(`  ${s.toFixed(1).padStart(7)} s  ${f}`);
    const doc = process.env.HARNESS_S_TEST_CPU_DOC;
    if (doc) writeTable(doc, rows, total);
  }
}

/** Vitest's own process (transforms, the reporters, the global setups' servers it reaped): what no file's count holds. */
function mainSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

function writeTable(doc: string, rows: [string, number][], total: number): void {
  const text = readFileSync(doc, "utf8");
  const [head, rest] = text.split(TEST_CPU.begin);
  const tail = rest?.split(TEST_CPU.end)[1];
  if (head === undefined || tail === undefined)
    throw new Error(`${doc} has no ${TEST_CPU.begin} … ${TEST_CPU.end} section for the table`);
  const table = [
    `${rows.length} files, ${total.toFixed(0)} CPU seconds in all (each file's fork and the children it ended; DynamoDB Local, shared by the run, in none), measured by \`npm run test:cpu\` on ${new Date().toISOString().slice(0, 10)}:`,
    "",
    "| file | CPU s |",
    "|---|---:|",
    ...rows.map(([f, s]) => `| \`${f}\` | ${s.toFixed(1)} |`),
  ].join("\n");
  writeFileSync(doc, `${head}${TEST_CPU.begin}\n${table}\n${TEST_CPU.end}${tail}`);
}
