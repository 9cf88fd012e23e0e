// The SQLite sandbox process: one in-memory database at a time (a fresh one per rollout it
// serves, the last one closed first), driven over IPC by SqliteEngine. It runs in
// a process of its own, started under a data-size limit (RLIMIT_DATA), so that a statement that
// never ends (a recursive CTE) can be stopped by killing the process, and one that asks for too
// much memory fails (SQLite's "out of memory") or ends this process, never its parent. The
// database is capped by page count; after every statement that may have written, the database
// is serialised and sent to the parent, which restores it into a fresh sandbox after a timeout or
// a crash. Rows are rendered here as the agent sees them (python-text.mjs), so a huge result is
// read only as far as the text is shown. Plain JavaScript, so it starts without a TypeScript loader.
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import { RowsText } from "../python-text.mjs";

let db;
const quoteId = (s) => `\`${s.replace(/`/g, "``")}\``;
/** Bytes of a blob rendered at most: past the 800 characters shown, the rest is never copied. */
const BLOB_SHOWN = 1024;

const toPy = (v) => {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return { int: v.toString() };
  if (typeof v === "number") return { float: v };
  if (Buffer.isBuffer(v)) return { raw: `b'${v.subarray(0, BLOB_SHOWN).toString("latin1")}${v.length > BLOB_SHOWN ? "" : "'"}` };
  return String(v);
};

/** Pages the temp schema may hold: the guard refuses temporary tables, and whatever gets past it is capped here too. */
const TEMP_MAX_PAGES = 16;

function open(snapshot, maxPages) {
  db?.close();
  db = snapshot ? new Database(Buffer.from(snapshot)) : new Database(":memory:");
  db.pragma(`max_page_count = ${Number(maxPages)}`);
  db.pragma("temp_store = MEMORY");
  db.pragma(`temp.max_page_count = ${TEMP_MAX_PAGES}`);
  db.function("md5", { deterministic: true }, (s) => (s === null ? null : createHash("md5").update(String(s)).digest("hex")));
}

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
  const wrote = (reply) => (stmt.readonly ? reply : { ...reply, snapshot: db.serialize() });
  if (!stmt.reader) return wrote({ kind: "ok", changes: Number(stmt.run().changes) });
  const text = new RowsText(undefined, maxRows);
  let truncated = false;
  for (const r of stmt.raw(true).iterate()) {
    if (!text.push(r.map(toPy))) {
      truncated = true;
      break;
    }
  }
  return wrote({ kind: "rows", text: text.text(), rowCount: text.rows, truncated });
}

function handle(m) {
  if (m.op === "close") {
    db?.close();
    db = undefined;
    return { id: m.id, ok: true };
  }
  if (m.op === "open") {
    open(m.snapshot, m.maxPages);
    for (const t of m.tables ?? []) load(t);
    return { id: m.id, ok: true };
  }
  return { id: m.id, ok: true, ...exec(m.sql, m.maxRows) };
}

process.on("message", (m) => {
  let reply;
  try {
    reply = handle(m);
  } catch (err) {
    reply = { id: m.id, ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  try {
    process.send(reply);
  } catch {
    // The statement ran but its answer (with the database's snapshot) cannot be sent, out of
    // memory: end here, so that the parent restores the database as it was before the statement
    // and the agent's "out of memory" is true of the database too.
    process.exit(70);
  }
});
process.on("disconnect", () => process.exit(0));
process.send({ ready: true });
