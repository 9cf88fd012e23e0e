import { loadSplit, MysqlEngine, verifyGold } from "@harness-s/dbbench";
const split = (process.argv[2] ?? "dev") as "dev";
const rows = await loadSplit("../shared/data/dbbench", split);
const engine = await MysqlEngine.start();
const t = Date.now();
const r = await verifyGold(rows, engine, split, { concurrency: 8 });
console.log(JSON.stringify({ ...r, details: r.details.slice(0, 5) }, null, 1), (Date.now() - t) / 1000, "s", await engine.leftovers());
await engine.shutdown();
