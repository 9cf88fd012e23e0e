import { execFile } from "node:child_process";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashSecret, KeyEventView, KeyView } from "@harness-s/core/access";
import { memoryApiDeps, startApi } from "../api-factory.ts";

const ADMIN_SECRET = "hs_cli-keys-test-admin-secret";
const { HARNESS_S_ADMIN_KEY: _unset, ...inheritedEnv } = process.env;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `harness-s keys …` as a child process (as an operator runs it), with `env` added to an environment that holds no
 * admin key.
 */
function keys(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) =>
    execFile(
      "node",
      ["packages/cli/bin/harness-s.js", "keys", ...args],
      { timeout: 60_000, env: { ...inheritedEnv, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const secretIn = (stdout: string) => /^secret \(shown once[^)]*\): (hs_\S+)$/m.exec(stdout)?.[1];

describe("harness-s keys (issue 56) against the API over HTTP", () => {
  let api: { url: string; close: () => Promise<void> };
  const asAdmin = () => ["--url", api.url, "--admin-key", ADMIN_SECRET];
  const status = async (id: string, secret: string) =>
    (await fetch(`${api.url}/v1/keys/${id}`, { headers: { authorization: `Bearer ${secret}` } })).status;

  beforeAll(async () => {
    const deps = memoryApiDeps();
    await deps.keys.put({ id: "admin", hash: hashSecret(ADMIN_SECRET), scopes: ["admin"] });
    api = await startApi(deps);
  });
  afterAll(() => api.close());

  it("create → list → show → update → rotate → revoke → events: readable lines, --json as the API answered, each secret printed once", async () => {
    const created = await keys([
      "create",
      ...asAdmin(),
      "--scopes",
      "route,pools:read",
      "--label",
      "ci runner",
      "--quota",
      "100",
      "--budget-usd",
      "5",
      "--rate",
      "2:4",
      "--expires",
      "2030-01-01T00:00:00Z",
    ]);
    expect(created).toMatchObject({ code: 0, stderr: "" });
    const id = /^created key (\S+) \(active\)$/m.exec(created.stdout)?.[1];
    const firstSecret = secretIn(created.stdout);
    expect(id).toBeDefined();
    expect(firstSecret).toMatch(/^hs_/);
    expect(created.stdout).toMatch(
      /scopes\s+route,pools:read\n.*quota\s+100 requests\n.*budget\s+\$5\n.*rate\s+2\/s, burst 4\n.*expires\s+2030-01-01T00:00:00\.000Z/,
    );
    expect(created.stdout).not.toContain(ADMIN_SECRET);
    expect(await status(id!, firstSecret!)).toBe(200);

    // The admin key from the environment (no --admin-key on the command line).
    const listed = await keys(["list", "--url", api.url, "--json"], { HARNESS_S_ADMIN_KEY: ADMIN_SECRET });
    expect(listed.code).toBe(0);
    const list = JSON.parse(listed.stdout) as { keys: unknown[] };
    expect(list.keys.map((k) => KeyView.parse(k).id)).toEqual(["admin", id]);
    expect(listed.stdout).not.toMatch(/secret"|hash/);

    const shown = await keys(["show", id!, ...asAdmin()]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^key ${id} \\(active\\)\\n\\s+label\\s+ci runner\\n`));
    expect(shown.stdout).toMatch(/secrets\s+1 working/);
    expect(secretIn(shown.stdout)).toBeUndefined();

    const updated = await keys([
      "update",
      id!,
      ...asAdmin(),
      "--quota",
      "none",
      "--rate",
      "3:9",
      "--label",
      "ci runner 2",
      "--json",
    ]);
    expect(updated.code).toBe(0);
    const afterUpdate = KeyView.parse(JSON.parse(updated.stdout));
    expect(afterUpdate).toMatchObject({ id, label: "ci runner 2", budgetUsd: 5, rate: { perSecond: 3, burst: 9 } });
    expect(afterUpdate.requestQuota).toBeUndefined();

    const rotated = await keys(["rotate", id!, ...asAdmin(), "--grace-seconds", "60"]);
    expect(rotated.code).toBe(0);
    const secondSecret = secretIn(rotated.stdout);
    expect(rotated.stdout).toMatch(new RegExp(`^rotated key ${id} \\(active\\)$`, "m"));
    expect(rotated.stdout).toMatch(/secrets\s+2 working; one retiring at \S+/);
    expect(secondSecret).toMatch(/^hs_/);
    expect(secondSecret).not.toBe(firstSecret);
    expect([await status(id!, firstSecret!), await status(id!, secondSecret!)]).toEqual([200, 200]);

    const revoked = await keys(["revoke", id!, ...asAdmin(), "--json"]);
    expect(revoked.code).toBe(0);
    expect(KeyView.parse(JSON.parse(revoked.stdout)).status).toBe("revoked");

    const events = await keys(["events", id!, ...asAdmin()]);
    expect(events.code).toBe(0);
    expect(events.stdout.split("\n")[0]).toMatch(/^AT\s+ACTION\s+BY\s+CHANGES$/);
    expect(events.stdout.split("\n").map((line) => line.split(/\s+/)[1])).toEqual([
      "ACTION",
      "revoked",
      "rotated",
      "updated",
      "created",
      undefined,
    ]);
    expect(events.stdout).toMatch(
      /updated\s+admin\s+\{"label":"ci runner 2","requestQuota":null,"rate":\{"perSecond":3,"burst":9\}\}/,
    );
    const eventsJson = await keys(["events", id!, ...asAdmin(), "--json"]);
    const parsed = (JSON.parse(eventsJson.stdout) as { events: unknown[] }).events.map((e) => KeyEventView.parse(e));
    expect(parsed.map((e) => e.action)).toEqual(["revoked", "rotated", "updated", "created"]);
    for (const out of [events.stdout, eventsJson.stdout])
      for (const secret of [firstSecret!, secondSecret!, ADMIN_SECRET]) expect(out).not.toContain(secret);
  }, 240_000);

  it("a refused request exits 1 with the API's code and message and never the secret sent; no key is a usage error; a silent API is a timeout", async () => {
    const silent = createServer((socket: Socket) => socket.on("error", () => {}));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const wrong = "hs_not-a-key-of-this-deployment";
    const started = Date.now();
    const [badKey, noKey, missing, timedOut] = await Promise.all([
      keys(["list", "--url", api.url, "--admin-key", wrong]),
      keys(["list", "--url", api.url]),
      keys(["show", "key_none", ...asAdmin()]),
      keys(["list", "--url", silentUrl, "--admin-key", wrong, "--timeout-seconds", "1"]),
    ]);
    silent.close();
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^error \[UNAUTHENTICATED\]: a valid API key is required .*\(HTTP 401\)$/m);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error \[NOT_FOUND\]: key "key_none" not found \(HTTP 404\)$/m);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/error \[USAGE\]: no key to act with: give --admin-key or set \$HARNESS_S_ADMIN_KEY/);
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toMatch(
      /^error \[TIMEOUT\]: GET http:\/\/127\.0\.0\.1:\d+\/v1\/keys: no reply within 1 s$/m,
    );
    expect(Date.now() - started).toBeLessThan(50_000);
    for (const ran of [badKey, timedOut]) expect(ran.stdout + ran.stderr).not.toContain(wrong);
    for (const ran of [badKey, noKey, missing, timedOut]) expect(ran.stdout).toBe("");
  }, 120_000);
});
