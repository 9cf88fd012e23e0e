import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/*
 * Every shell example in README.md and docs/*.md runs, or says why it does not (issue 52, "Docs
 * that do not run").
 *
 * Each fenced ```bash, ```sh, ```shell or ```console block is declared by an HTML comment that
 * ends on the line just before its fence:
 *   <!-- example: runs -->                              this test runs it on loopback;
 *   <!-- example: runs, continuing the block above -->  run in the same shell, after the runnable
 *                                                       block before it in the file, whose
 *                                                       background services are still up (the
 *                                                       docs say so in their text);
 *   <!-- example: not run here: <reason> -->            e.g. it needs AWS credentials, a GPU and
 *                                                       real weights, a 30-minute build.
 * A block without a declaration, or "not run here" without a reason, fails.
 *
 * A runnable block's commands are pasted one at a time into one bash at the repository root, as
 * a user would paste them:
 * - a command continues past a line ending in `\` and while a quote is open; comment-only lines
 *   are skipped;
 * - a command ending in `&` (before any comment) starts a background service in its own process
 *   group; it names its port with `--port N`, and the next command waits until an HTTP server answers
 *   there;
 * - each port named by `--port N` in the block (or its chain) is replaced everywhere in the
 *   block's text by a free port picked now, and `/tmp/` by a temporary folder of this run, so runs
 *   side by side never collide;
 * - every other command must exit 0; a comment line `# → <expected>` after a command states what
 *   it prints on stdout: the output (leading whitespace aside) must start with it, where `…`
 *   matches any text and a run of spaces any whitespace;
 * - at the end, pass or fail, each service's process group gets SIGTERM (SIGKILL after 25 s),
 *   the shell's group SIGKILL, and no process of any of those groups may remain.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];
const SHELL_LANGUAGES = new Set(["bash", "sh", "shell", "console"]);
/** Hang guards only: a service that does not listen, a command that does not end. */
const SERVICE_START_MS = 180_000;
const COMMAND_MS = 400_000;
const STOP_GRACE_MS = 25_000;
const MARK = "__DOC_EXAMPLE__";

interface Block {
  file: string;
  /** The fence's line (1-based). */
  line: number;
  text: string;
  /** The declaration comment's text after `example:`, when there is one. */
  declaration: string | undefined;
}

type Declared = { kind: "runs" } | { kind: "continues" } | { kind: "not-run"; reason: string };

interface Command {
  /** As written (comments kept), to run in the foreground. */
  text: string;
  /** Without comments and without the trailing `&` of a background command. */
  code: string;
  background: boolean;
  /** Line in the block where the command starts (0-based). */
  line: number;
  expect?: string;
}

/** Every shell block of a Markdown text, with the declaration just before its fence. */
function shellBlocks(file: string, markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
    let end = i + 1;
    while (end < lines.length && !closing.test(lines[end]!)) end++;
    if (SHELL_LANGUAGES.has(open[2]!.toLowerCase()))
      blocks.push({
        file,
        line: i + 1,
        text: lines.slice(i + 1, end).join("\n"),
        declaration: declarationBefore(lines, i),
      });
    i = end;
  }
  return blocks;
}

function declarationBefore(lines: readonly string[], fence: number): string | undefined {
  if (!lines[fence - 1]?.trimEnd().endsWith("-->")) return undefined;
  let start = fence - 1;
  while (start >= 0 && !lines[start]!.includes("<!--")) start--;
  if (start < 0) return undefined;
  const comment = lines.slice(start, fence).join("\n");
  const m = /<!--\s*example:([\s\S]*?)-->\s*$/.exec(comment.slice(comment.indexOf("<!--")));
  return m ? m[1]!.replace(/\s+/g, " ").trim() : undefined;
}

/** What a declaration says, or why it is not one. */
function declared(declaration: string | undefined): Declared | { problem: string } {
  if (declaration === undefined)
    return { problem: "no <!-- example: runs --> or <!-- example: not run here: <reason> --> just before it" };
  if (declaration === "runs") return { kind: "runs" };
  if (declaration === "runs, continuing the block above") return { kind: "continues" };
  const notRun = /^not run here:(.*)$/.exec(declaration);
  if (notRun)
    return notRun[1]!.trim()
      ? { kind: "not-run", reason: notRun[1]!.trim() }
      : { problem: '"not run here" without a reason' };
  return { problem: `unknown declaration "${declaration}"` };
}

/**
 * The text without its comments, and whether a quote is still open at its end (enough of bash's quoting for the docs).
 */
function scan(text: string): { code: string; open: boolean } {
  let code = "";
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
    } else if (quote === '"') {
      if (c === "\\") code += text[i++]!;
      else if (c === '"') quote = undefined;
    } else if (c === "\\") {
      code += text[i++]!;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]!))) {
      while (i + 1 < text.length && text[i + 1] !== "\n") i++;
      continue;
    }
    code += text[i] ?? "";
  }
  return { code, open: quote !== undefined };
}

/** A block's commands, each with the expectation stated after it. */
function commandsOf(text: string): Command[] {
  const commands: Command[] = [];
  let pending: string[] = [];
  let start = 0;
  for (const [n, line] of text.split("\n").entries()) {
    if (pending.length === 0) {
      const expectation = /^\s*#\s*→(.*)$/.exec(line);
      if (expectation) {
        const last = commands.at(-1);
        if (!last || last.expect !== undefined)
          throw new Error(`line ${n + 1}: "# →" follows no command, or a command that has one already`);
        last.expect = expectation[1]!.trim();
        continue;
      }
      if (/^\s*(#.*)?$/.test(line)) continue;
      start = n;
    }
    pending.push(line);
    const { code, open } = scan(pending.join("\n"));
    const trimmed = code.trimEnd();
    if (open || trimmed.endsWith("\\")) continue;
    const background = /(^|[^&])&$/.test(trimmed);
    commands.push({
      text: pending.join("\n"),
      code: background ? trimmed.slice(0, -1) : trimmed,
      background,
      line: start,
    });
    pending = [];
  }
  if (pending.length > 0) throw new Error(`line ${start + 1}: a command never ends (an open quote or a last "\\")`);
  return commands;
}

/** `# → <expected>` as a pattern: anchored at the start, `…` any text, a run of spaces any whitespace. */
function expectationPattern(expected: string): RegExp {
  const literal = (s: string) =>
    s
      .split(/\s+/)
      .map((w) => w.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
      .join("\\s+");
  return new RegExp(`^${expected.trim().split("…").map(literal).join(".*?")}`, "s");
}

/** The blocks to run together: each runnable block, with the blocks that continue it. */
function chainsOf(blocks: readonly Block[]): Block[][] {
  const chains: Block[][] = [];
  let previous: { file: string; runnable: boolean } | undefined;
  for (const b of blocks) {
    const d = declared(b.declaration);
    const kind = "kind" in d ? d.kind : undefined;
    if (kind === "runs") chains.push([b]);
    if (kind === "continues" && previous?.file === b.file && previous.runnable) chains.at(-1)!.push(b);
    previous = { file: b.file, runnable: kind === "runs" || kind === "continues" };
  }
  return chains;
}

/** Why each block's declaration does not hold (none when all do). */
function problemsOf(blocks: readonly Block[]): string[] {
  const problems: string[] = [];
  for (const [i, b] of blocks.entries()) {
    const d = declared(b.declaration);
    const before = blocks[i - 1];
    const runnable = (x: Block | undefined) =>
      x !== undefined &&
      x.file === b.file &&
      ["runs", "continues"].includes((declared(x.declaration) as { kind?: string }).kind ?? "");
    if ("problem" in d) problems.push(`${b.file}:${b.line}: ${d.problem}`);
    else if (d.kind === "continues" && !runnable(before))
      problems.push(`${b.file}:${b.line}: continues no runnable block`);
    if (!("problem" in d) && d.kind !== "not-run") {
      try {
        for (const c of commandsOf(b.text))
          if (c.background && !/--port\s+\d+/.test(c.code))
            problems.push(`${b.file}:${b.line + c.line + 1}: a background command names no --port N`);
      } catch (err) {
        problems.push(`${b.file}:${b.line}: ${(err as Error).message}`);
      }
    }
  }
  return problems;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Live (not zombie) processes of these process groups. */
function members(groups: ReadonlySet<number>): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (state !== "Z" && groups.has(Number(pgrp)))
      found.push(`${pid} ${stat.slice(stat.indexOf("("), stat.lastIndexOf(")") + 1)}`);
  }
  return found;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Whether an HTTP server answers on `port` (any status): a connection accepted is not enough, since serve checks that
 * its port is free by listening on it for a moment, long before it serves (a docs run once sent its first request
 * into that moment).
 */
const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.once("connect", () => socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    socket.once("data", (d: Buffer) => done(d.toString("latin1").startsWith("HTTP/")));
    socket.once("error", () => done(false));
    socket.once("close", () => done(false));
  });
const tail = (text: string, n = 3000) => (text.length > n ? `…${text.slice(-n)}` : text);

/** One bash, fed one command at a time; its services in process groups of their own. */
class Shell {
  readonly dir = mkdtempSync(join(tmpdir(), "docs-example-"));
  private readonly bash: ChildProcessWithoutNullStreams;
  private readonly groups = new Set<number>();
  private out = "";
  private err = "";
  private n = 0;

  constructor() {
    this.bash = spawn("bash", [], { cwd: ROOT, detached: true, stdio: "pipe" });
    this.groups.add(this.bash.pid!);
    // A write after bash ended is reported by send(), not as an unhandled EPIPE.
    this.bash.stdin.on("error", () => undefined);
    this.bash.stdout.on("data", (d: Buffer) => (this.out += d.toString()));
    this.bash.stderr.on("data", (d: Buffer) => (this.err += d.toString()));
  }

  /** Sends `script` and answers the number it ends with (`echo MARK n <number>`). */
  private async send(script: (n: number) => string, timeoutMs: number): Promise<{ n: number; value: number }> {
    const n = ++this.n;
    this.bash.stdin.write(script(n));
    const mark = new RegExp(`${MARK} ${n} (\\d+)`);
    const until = Date.now() + timeoutMs;
    for (;;) {
      const m = mark.exec(this.out);
      if (m) return { n, value: Number(m[1]) };
      if (this.bash.exitCode !== null) throw new Error(`bash ended (${this.bash.exitCode}): ${tail(this.err)}`);
      if (Date.now() > until) throw new Error(`still running after ${timeoutMs / 1000} s`);
      await sleep(100);
    }
  }

  async run(cmd: Command): Promise<{ rc: number; stdout: string; stderr: string }> {
    const { n, value } = await this.send(
      (i) => `{\n${cmd.text}\n} </dev/null >'${this.dir}/${i}.out' 2>'${this.dir}/${i}.err'\necho "${MARK} ${i} $?"\n`,
      COMMAND_MS,
    );
    const read = (ext: string) => readFileSync(join(this.dir, `${n}.${ext}`), "utf8");
    return { rc: value, stdout: read("out"), stderr: read("err") };
  }

  /** Starts a background service in a process group of its own and waits until it answers HTTP on its port. */
  async start(cmd: Command, port: number): Promise<void> {
    const { n, value: pgid } = await this.send(
      (i) => `set -m\n{\n${cmd.code}\n} </dev/null >'${this.dir}/${i}.log' 2>&1 &\necho "${MARK} ${i} $!"\nset +m\n`,
      10_000,
    );
    this.groups.add(pgid);
    const until = Date.now() + SERVICE_START_MS;
    while (!(await answers(port))) {
      const log = () => tail(readFileSync(join(this.dir, `${n}.log`), "utf8"));
      if (members(new Set([pgid])).length === 0)
        throw new Error(`\`${cmd.code.trim()}\` ended before listening on ${port}:\n${log()}`);
      if (Date.now() > until)
        throw new Error(
          `\`${cmd.code.trim()}\` not listening on ${port} after ${SERVICE_START_MS / 1000} s:\n${log()}`,
        );
      await sleep(250);
    }
  }

  /** Stops every service and the shell; answers the processes that outlived it (none, if all is well). */
  async close(): Promise<string[]> {
    const services = [...this.groups].filter((g) => g !== this.bash.pid);
    for (const g of services) signalGroup(g, "SIGTERM");
    for (const until = Date.now() + STOP_GRACE_MS; members(new Set(services)).length > 0 && Date.now() < until; )
      await sleep(200);
    for (const g of this.groups) signalGroup(g, "SIGKILL");
    for (const until = Date.now() + 5_000; members(this.groups).length > 0 && Date.now() < until; ) await sleep(100);
    rmSync(this.dir, { recursive: true, force: true });
    open.delete(this);
    return members(this.groups);
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group has ended
  }
}

const open = new Set<Shell>();
afterAll(async () => {
  for (const shell of open) await shell.close();
}, 60_000);

/** Runs a chain of blocks in one shell; throws at the first command that fails or prints something else than stated. */
async function runChain(chain: readonly Block[]): Promise<void> {
  const shell = new Shell();
  open.add(shell);
  let failure: unknown;
  try {
    const ports = new Map<string, number>();
    for (const b of chain)
      for (const [, p] of b.text.matchAll(/--port\s+(\d+)/g)) if (!ports.has(p!)) ports.set(p!, await freePort());
    const swap = ports.size > 0 ? new RegExp(`\\b(${[...ports.keys()].join("|")})\\b`, "g") : undefined;
    for (const b of chain) {
      const text = (swap ? b.text.replace(swap, (p) => String(ports.get(p))) : b.text).replaceAll(
        "/tmp/",
        `${shell.dir}/`,
      );
      for (const cmd of commandsOf(text)) await runCommand(shell, cmd, `${b.file}:${b.line + cmd.line + 1}`);
    }
  } catch (err) {
    failure = err;
  }
  const survivors = await shell.close();
  if (failure instanceof Error && survivors.length > 0)
    failure.message += `\nand these outlived it: ${survivors.join(", ")}`;
  if (failure) throw failure;
  expect(survivors, "processes that outlived the example").toEqual([]);
}

async function runCommand(shell: Shell, cmd: Command, where: string): Promise<void> {
  if (cmd.background) return shell.start(cmd, Number(/--port\s+(\d+)/.exec(cmd.code)![1]));
  const { rc, stdout, stderr } = await shell.run(cmd);
  const shown = `${where}: \`${cmd.text}\`\nexited ${rc}; stdout:\n${tail(stdout)}\nstderr:\n${tail(stderr)}`;
  if (rc !== 0) throw new Error(shown);
  if (cmd.expect !== undefined && !expectationPattern(cmd.expect).test(stdout.trimStart()))
    throw new Error(`${shown}\nexpected: # → ${cmd.expect}`);
}

const blocks = DOCS.flatMap((f) => shellBlocks(f, readFileSync(join(ROOT, f), "utf8")));

describe("the docs' shell examples", () => {
  it("are each declared: runs on loopback here, or not run here with the reason", () => {
    expect(blocks.length).toBeGreaterThan(0);
    expect(problemsOf(blocks)).toEqual([]);
  });

  for (const chain of chainsOf(blocks)) {
    it(`${chain.map((b) => `${b.file}:${b.line}`).join(" then ")} runs as written`, () => runChain(chain), 900_000);
  }
});

describe("the rules the docs' examples are held to", () => {
  const doc = (declaration: string, body: string) => `text\n${declaration}\n\`\`\`bash\n${body}\n\`\`\`\n`;

  it("a block without a declaration, or not run without a reason, is a problem; other fences are not examples", () => {
    const undeclared = shellBlocks(
      "x.md",
      "text\n\n```sh\necho hi\n```\n```\nnot shell\n```\n```ts\nconst x = 1;\n```\n",
    );
    expect(undeclared).toHaveLength(1);
    expect(problemsOf(undeclared)).toEqual([
      "x.md:3: no <!-- example: runs --> or <!-- example: not run here: <reason> --> just before it",
    ]);
    expect(problemsOf(shellBlocks("x.md", doc("<!-- example: not run here: -->", "echo hi")))).toEqual([
      'x.md:3: "not run here" without a reason',
    ]);
    expect(problemsOf(shellBlocks("x.md", doc("<!-- example: maybe -->", "echo hi")))).toEqual([
      'x.md:3: unknown declaration "maybe"',
    ]);
    expect(problemsOf(shellBlocks("x.md", doc("<!-- example: runs -->", "sleep 1 &")))).toEqual([
      "x.md:4: a background command names no --port N",
    ]);
    expect(
      problemsOf(
        shellBlocks("x.md", doc("<!-- example:\n  not run here: needs AWS credentials -->", "npx sst deploy")),
      ),
    ).toEqual([]);
    expect(
      problemsOf(shellBlocks("x.md", doc("<!-- example: runs, continuing the block above -->", "echo hi"))),
    ).toEqual(["x.md:3: continues no runnable block"]);
  });

  it("splits commands at line ends outside quotes and continuations, and reads background lines and expectations", () => {
    const cmds = commandsOf(
      [
        "# a comment",
        "srv --port 1 &   # a service, 'quoted'",
        'curl -s -d \'{"a":',
        "   1}' \\",
        "  x   # it's",
        '# → {"a":…} 200',
        "",
        "a && b",
      ].join("\n"),
    );
    expect(cmds.map((c) => [c.background, c.code.trim(), c.expect])).toEqual([
      [true, "srv --port 1", undefined],
      [false, "curl -s -d '{\"a\":\n   1}' \\\n  x", '{"a":…} 200'],
      [false, "a && b", undefined],
    ]);
    expect(expectationPattern('{"a":…} 200').test('{"a":1,\n"b":[2]} 200\n')).toBe(true);
    expect(expectationPattern('{"a":…} 200').test('x{"a":1} 200')).toBe(false);
    expect(expectationPattern("groups: 4 (4 unrescued)").test("groups:  4\n(4 unrescued); steps: 2")).toBe(true);
  });
});
