import type { SqlEngine } from "./engine.ts";
import { MysqlEngine } from "./mysql.ts";
import { SqliteEngine } from "./sqlite.ts";

/** The SQL engine a command runs on: MariaDB/MySQL at `mysqlUrl`, or embedded SQLite. */
export async function openEngine(o: { engine: "mysql" | "sqlite"; mysqlUrl: string }): Promise<SqlEngine> {
  if (o.engine === "sqlite") return new SqliteEngine();
  const url = new URL(o.mysqlUrl);
  return MysqlEngine.start({
    host: url.hostname,
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username || "root"),
    password: decodeURIComponent(url.password),
  });
}
