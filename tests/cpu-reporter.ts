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
    const tests: TestLine[] = [];
    for (const line of readFileSync(lines, "utf8").split("\n").filter(Boolean)) {
      const row = JSON.parse(line) as TestLine | { file: string; cpuSeconds: number; test?: undefined };
      const name = relative(process.cwd(), row.file);
      if (row.test !== undefined) tests.push({ ...row, file: name });
      else byFile.set(name, (byFile.get(name) ?? 0) + row.cpuSeconds);
    }
    const rows = [...byFile].sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((n, [, s]) => n + s, 0);
    console.log(
      `\ntest CPU: ${total.toFixed(0)} s in ${rows.length} files (their forks and the children they ended), ${mainSeconds().toFixed(0)} s in vitest's own process; the costliest:`,
    );
    for (const [f, s] of rows.slice(0, 10)) console.log(`  ${s.toFixed(1).padStart(7)} s  ${f}`);
    printCostliestTests(tests);
    const doc = process.env.HARNESS_S_TEST_CPU_DOC;
    if (doc) writeTable(doc, rows, total);
  }
}

/** One test's line: its own CPU seconds, and the shared policy worker's while it ran (files beside it included). */
interface TestLine {
  file: string;
  test: string;
  cpuSeconds: number;
  sharedWorkerSeconds: number;
}

function printCostliestTests(tests: TestLine[]): void {
  if (tests.length === 0) return;
  const cost = (t: TestLine) => t.cpuSeconds + t.sharedWorkerSeconds;
  console.log("the costliest tests (own CPU s + the shared policy worker's while they ran):");
  for (const t of [...tests].sort((a, b) => cost(b) - cost(a)).slice(0, 15))
    console.log(
      `  ${t.cpuSeconds.toFixed(1).padStart(7)} + ${t.sharedWorkerSeconds.toFixed(1).padStart(5)} s  ${t.file} > ${t.test.slice(0, 90)}`,
    );
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
