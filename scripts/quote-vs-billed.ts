/**
 * Quote against what is billed, as a customer meets it: a fresh `harness-s serve` (DynamoDB Local, fauxqs, its tiny
 * model as `tiny`, no finished run: every quote on the defaults), `env-serve --env embedded` as the customer's own
 * OpenEnv server, a policy worker as the customer's own trainer policy (for the pool it evolves). Each configuration is
 * quoted (`POST /v1/quotes`), then run and polled to its end, and what its record says was billed (`actual`) set
 * beside the quote of the path it took (the whole run, or the failure the quote names). Then the key's day from
 * `GET /v1/usage`: charge against cost of goods.
 *
 *   node --import tsx scripts/quote-vs-billed.ts [--only embedded,dbbench,…] [--json out.json]
 */
import { writeFile } from "node:fs/promises";
import { startPolicyWorker } from "../packages/cli/src/policy-worker.ts";
import { startEnvServe, startServe, trainerEndpoint } from "./serve-process.ts";

const TOKEN = "customer-trainer-token";
const tiny = {
  seeds: [1],
  arms: ["grpo", "harness-s"],
  train: { steps: 1, batchSize: 1, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 },
  evalTasks: 1,
  evalSamples: 3,
};
type Task = { id: string } & Record<string, unknown>;
type Reply = { status: number; body: any };
type Call = (method: string, path: string, body?: unknown) => Promise<Reply>;
const ENDS = ["done", "failed", "stopped", "cancelled"];

function caller(url: string, key: string): Call {
  return async (method, path, body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) };
    } catch {
      return { status: res.status, body: text };
    }
  };
}

async function untilEnd(call: Call, path: string): Promise<any> {
  for (;;) {
    const { body } = await call("GET", path);
    if (ENDS.includes(body.status)) return body;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** The quote of the path a run took: its failure's where the quote names one and the run failed there, else the whole. */
function quotedPath(quote: any, record: any): { path: string; rollouts: number; chargeUsd: number } {
  const failed =
    record.status === "failed" &&
    (quote.paths ?? []).find((p: any) => p.failsWith === (record.errorCode ?? record.error?.code));
  const p = failed || { path: "whole run", rollouts: quote.rollouts, chargeUsd: quote.chargeUsd };
  return { path: p.path ?? p.name, rollouts: p.rollouts, chargeUsd: p.chargeUsd };
}

/** How far `billed` is from `quoted`, as a signed share of the quote. */
const off = (billed: number, quoted: number) =>
  quoted === 0 ? (billed === 0 ? 0 : Infinity) : (billed - quoted) / quoted;
const percent = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;

interface Row {
  name: string;
  /** From its start to the poll that saw it end (polled each second). */
  seconds: number;
  status: string;
  path: string;
  quoted: { rollouts: number; chargeUsd: number };
  billed: { rollouts: number; chargeUsd: number; costOfGoodsUsd: number };
  error?: string | null;
  usage?: unknown;
}

/** What one configuration's measurement needs: the customer's key at `serve`, and where to log. */
interface Session {
  call: Call;
  log: (line: string) => void;
  rows: Row[];
}

/** Quotes `body` as `kind`, starts it at `start`, polls `status(id)` to its end: one row; the started job's id. */
async function measure(
  { call, log, rows }: Session,
  name: string,
  kind: "experiment" | "pool",
  body: unknown,
  start: string,
  status: (id: string) => string,
): Promise<string> {
  const quote = await call("POST", "/v1/quotes", { [kind]: body });
  if (quote.status !== 200) throw new Error(`${name}: quote ${quote.status} ${JSON.stringify(quote.body)}`);
  const run = await call("POST", start, kind === "pool" ? { evolve: body } : body);
  if (run.status !== 202) throw new Error(`${name}: start ${run.status} ${JSON.stringify(run.body)}`);
  log(`${name}: quoted ${quote.body.rollouts} rollouts, ${quote.body.chargeUsd} USD; started ${run.body.id}`);
  const runStarted = Date.now();
  const record = await untilEnd(call, status(run.body.id));
  const actual = record.actual;
  const q = quotedPath(quote.body, record);
  const row: Row = {
    name,
    seconds: (Date.now() - runStarted) / 1000,
    status: record.status,
    path: q.path,
    quoted: { rollouts: q.rollouts, chargeUsd: q.chargeUsd },
    billed: {
      rollouts: actual.usage.rollouts,
      chargeUsd: actual.chargeUsd,
      costOfGoodsUsd: actual.costOfGoods.totalUsd,
    },
    error: typeof record.error === "string" ? record.error : (record.error?.message ?? null),
    usage: { quoted: quote.body.usage, billed: actual.usage },
  };
  log(`${name}: ${JSON.stringify(row)}`);
  rows.push(row);
  return run.body.id as string;
}

const experiment = (session: Session, name: string, body: unknown) =>
  measure(session, name, "experiment", body, "/v1/experiments", (id) => `/v1/experiments/${id}`);

/** The customer's own pool: its trainer policy registered as the key's endpoint, a pool evolved with it (measured). */
async function evolvedPool(session: Session, workerUrl: string, envUrl: string, tasks: Task[]): Promise<string> {
  const endpoint = await trainerEndpoint(workerUrl, TOKEN);
  const registered = await session.call("POST", "/v1/policy-endpoints", endpoint);
  if (registered.status !== 201) throw new Error(`endpoint: ${registered.status} ${JSON.stringify(registered.body)}`);
  const evolve = {
    endpoint: "mine",
    environment: { kind: "openenv", url: envUrl },
    devTasks: tasks.filter((t) => t.split === "dev").map(({ split: _s, ...t }) => t),
    maxTokens: 24,
    evolution: { directions: ["budget"], rounds: 1, candidatesPerRound: 1, trials: 1, poolSize: 1, repairMargin: 0 },
  };
  return measure(session, "pool evolution", "pool", evolve, "/v1/pools", (id) => `/v1/pools/evolutions/${id}`);
}

/** The table, whether every row is within 20%, and the key's day: charge against cost of goods. */
function report(rows: readonly Row[], usage: any): void {
  console.log(
    "\n| configuration | status (s) | path quoted | rollouts quoted / billed | charge USD quoted / billed | cost of goods USD |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const r of rows)
    console.log(
      `| ${r.name} | ${r.status} (${r.seconds.toFixed(0)} s) | ${r.path} | ${r.quoted.rollouts} / ${r.billed.rollouts} (${percent(off(r.billed.rollouts, r.quoted.rollouts))}) | ${r.quoted.chargeUsd.toFixed(5)} / ${r.billed.chargeUsd.toFixed(5)} (${percent(off(r.billed.chargeUsd, r.quoted.chargeUsd))}) | ${r.billed.costOfGoodsUsd.toFixed(5)} |`,
    );
  const within = rows.every(
    (r) =>
      Math.abs(off(r.billed.rollouts, r.quoted.rollouts)) <= 0.2 &&
      Math.abs(off(r.billed.chargeUsd, r.quoted.chargeUsd)) <= 0.2,
  );
  const covered = rows.every((r) => r.billed.chargeUsd >= r.billed.costOfGoodsUsd);
  console.log(
    `\nevery configuration within 20% (rollouts and charge): ${within}; every charge at least its cost of goods: ${covered}`,
  );
  console.log(
    `the key's day: charged ${usage.spentUsd} USD, cost of goods ${usage.costOfGoodsUsd} USD (${usage.usage.rollouts} rollouts, ${usage.usage.requests} requests): charge ≥ cost ${usage.spentUsd >= usage.costOfGoodsUsd}`,
  );
}

async function main() {
  const arg = (flag: string) =>
    process.argv.includes(flag) ? process.argv[process.argv.indexOf(flag) + 1] : undefined;
  const want = (name: string) => arg("--only") === undefined || arg("--only")!.split(",").includes(name);
  const started = Date.now();
  const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`);
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const serve = await startServe(["--allow-loopback-endpoints"]);
    stops.push(serve.stop);
    const env = await startEnvServe();
    stops.push(async () => env.proc.kill("SIGINT"));
    const worker = await startPolicyWorker({ model: "tiny", token: TOKEN });
    stops.push(worker.stop);
    const key = await serve.addKey("k-customer", ["experiments", "rescues", "pools:read", "pools:write"]);
    const session: Session = { call: caller(serve.url, key), log, rows: [] };
    log(`serve at ${serve.url}, the customer's env-serve at ${env.url}, its trainer's worker at ${worker.url}`);
    const tasks = ["train", "train", "dev", "dev", "held-out"].map((split, i) => ({ ...env.tasks[i]!, split }));
    const own = (extra: object) => ({
      ...tiny,
      model: "tiny",
      env: { kind: "openenv", url: env.url, tasks, ...extra },
    });
    if (want("embedded")) await experiment(session, "embedded", { ...tiny, env: "embedded" });
    if (want("dbbench")) await experiment(session, "dbbench", { ...tiny, env: "dbbench", model: "tiny" });
    if (want("own-env-pool")) {
      const poolId = await evolvedPool(session, worker.url, env.url, tasks);
      await experiment(session, "own-env-pool", own({ poolId }));
    }
    if (want("own-env-evolve")) await experiment(session, "own-env-evolve", own({}));
    if (want("fails")) await experiment(session, "fails (evolution capped)", { ...own({}), budget: { rollouts: 8 } });
    const usage = (await session.call("GET", "/v1/usage")).body;
    report(session.rows, usage);
    const out = arg("--json");
    if (out) await writeFile(out, JSON.stringify({ rows: session.rows, usage }, null, 2));
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

await main();
