// The SQLite sandbox process: one in-memory database, driven over IPC by SqliteEngine. It runs in
// a process of its own so that a statement that never ends (a recursive CTE) can be stopped by
// killing the process; the parent rebuilds the database in a fresh one. Plain JavaScript, so it
// starts without a TypeScript loader.
import { createHash } from "node:crypto";
import Database from "better-sqlite3";

const db = new Database(":memory:");
db.function("md5", { deterministic: true }, (s) => (s === null ? null : createHash("md5").update(String(s)).digest("hex")));
const quoteId = (s) => `\`${s.replace(/`/g, "``")}\``;

const toPy = (v) => {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return { int: v.toString() };
  if (typeof v === "number") return { float: v };
  if (Buffer.isBuffer(v)) return { raw: `b'${v.toString("latin1")}'` };
  return String(v);
};

function load(table) {
  const cols = table.columns.map(quoteId);
  db.exec(`CREATE TABLE IF NOT EXISTS ${quoteId(table.name)} (${cols.map((c) => `${c} TEXT COLLATE NOCASE`).join(",")})`);
  const insert = db.prepare(`INSERT INTO ${quoteId(table.name)} (${cols.join(",")}) VALUES (${cols.map(() => "?").join(",")})`);
  db.transaction(() => {
    for (const r of table.rows) insert.run(...r);
  })();
}

function exec(sql, maxRows) {
  const stmt = db.prepare(sql).safeIntegers(true);
  if (!stmt.reader) return { kind: "ok", changes: Number(stmt.run().changes) };
  const rows = [];
  let truncated = false;
  for (const r of stmt.raw(true).iterate()) {
    if (rows.length >= maxRows) {
      truncated = true;
      break;
    }
    rows.push(r.map(toPy));
  }
  return { kind: "rows", rows, truncated };
}

process.on("message", (m) => {
  try {
    if (m.op === "load") {
      for (const t of m.tables) load(t);
      process.send({ id: m.id, ok: true });
    } else if (m.op === "exec") process.send({ id: m.id, ok: true, ...exec(m.sql, m.maxRows) });
  } catch (err) {
    process.send({ id: m.id, ok: false, message: err instanceof Error ? err.message : String(err) });
  }
});
process.on("disconnect", () => process.exit(0));
process.send({ ready: true });
