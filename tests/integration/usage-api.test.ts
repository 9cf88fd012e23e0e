import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@harness-s/core";
import { newApiKey } from "@harness-s/core/access";
import { type MemoryQueue, MemoryUsageMeter } from "@harness-s/adapters/stores";
import { addKey, memoryApiDeps, startApi } from "../api-factory.ts";

describe("usage by period, its export and quotes over HTTP", () => {
  const clock = new ManualClock(Date.parse("2026-11-30T12:00:00Z"));
  const deps = memoryApiDeps({ meter: new MemoryUsageMeter(clock) });
  let api: { url: string; close: () => Promise<void> };
  let own: string;
  let admin: string;

  beforeAll(async () => {
    api = await startApi(deps);
    own = await addKey(deps, "alice", ["experiments"]);
    admin = await addKey(deps, "ops", ["admin"]);
    await deps.meter.add("alice", { rollouts: 10, sqsRequests: 4, dynamoWriteUnits: 2 });
    clock.advance(86_400_000);
    await deps.meter.add("alice", { rollouts: 5 });
    await deps.meter.add("bob", { rollouts: 7 });
  });
  afterAll(() => api?.close());

  const get = (path: string, secret: string) =>
    fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${secret}` } });

  it("lists a key's own usage by UTC day, with cost of goods and charge apart; another key's needs admin", async () => {
    const mine = await (await get("/v1/usage?from=2026-11-01&to=2026-12-31&granularity=day", own)).json();
    expect(mine.days.map((d: { day: string; usage: { rollouts: number } }) => [d.day, d.usage.rollouts])).toEqual([
      ["2026-11-30", 10],
      ["2026-12-01", 5],
    ]);
    expect(mine.days[0].costOfGoodsUsd).toBeCloseTo(4 * 0.4e-6 + 2 * 0.625e-6, 12);
    // The tariff's rollouts, and the goods passed through at cost: never below the day's cost of goods.
    expect(mine.days[0].chargeUsd).toBeCloseTo(10 * 0.0002 + 4 * 0.4e-6 + 2 * 0.625e-6, 12);
    expect(mine.days[0].chargeUsd).toBeGreaterThanOrEqual(mine.days[0].costOfGoodsUsd);
    // The totals say what is spent and left of each limit (issue 70 item 2): alice has none, so nothing is "left".
    const totals = await (await get("/v1/usage", own)).json();
    expect(totals).toMatchObject({ budgetUsd: null, leftUsd: null, requestQuota: null, requestsLeft: null });
    expect(totals.spentUsd).toBeCloseTo(15 * 0.0002 + totals.costOfGoodsUsd, 12);
    expect((await get("/v1/usage?from=2026-11-01&to=2026-12-31&keyId=bob", own)).status).toBe(403);
    expect((await get("/v1/usage?from=2026-12-31&to=2026-11-01", own)).status).toBe(400);
    const everyone = await (await get("/v1/usage?from=2026-12-01&to=2026-12-01&keyId=*", admin)).json();
    expect(everyone.days.map((d: { keyId: string }) => d.keyId)).toEqual(["alice", "bob"]);
    // Without a period: the totals, as before
    expect((await (await get("/v1/usage", own)).json()).usage.rollouts).toBe(15);
  });

  it("exports every key's days as CSV or JSON lines for an admin, one key's for its owner", async () => {
    const csv = await get("/v1/usage/export?from=2026-11-01&to=2026-12-31&keyId=*&format=csv", admin);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^keyId,day,requests,/);
    expect(lines.slice(1).map((l) => l.split(",").slice(0, 2).join(" "))).toEqual([
      '"alice" "2026-11-30"',
      '"alice" "2026-12-01"',
      '"bob" "2026-12-01"',
    ]);
    const jsonl = await (await get("/v1/usage/export?from=2026-11-01&to=2026-12-31", own)).text();
    expect(
      jsonl
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).keyId),
    ).toEqual(["alice", "alice"]);
    expect((await get("/v1/usage/export?from=2026-11-01&to=2026-12-31&format=xml", own)).status).toBe(400);
  });

  it("exports a key id a spreadsheet would run as a formula as text, whatever its first character (issue 52, item 17)", async () => {
    const hostile = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(1)", "\t=1", "\r=1"];
    for (const id of hostile) await deps.meter.add(id, { rollouts: 1 });
    const csv = await (await get(`/v1/usage/export?from=2026-12-01&to=2026-12-01&keyId=*&format=csv`, admin)).text();
    const ids = csv
      .split("\n")
      .slice(1, -1)
      .map((l) => l.match(/^("(?:[^"]|"")*"),/)![1]!);
    expect(ids).toEqual(expect.arrayContaining(hostile.map((id) => `"'${id.replace(/"/g, '""')}"`)));
    expect(ids).toContain('"alice"');
    expect(ids.every((cell) => !/^"?[=+\-@\t\r]/.test(cell))).toBe(true);
  });

  it("quotes what the run will do: a run its budget stops at 1,000 rollouts is quoted for 1,000, and says so (issue 52, item 16)", async () => {
    const post = (body: unknown) =>
      fetch(`${api.url}/v1/quotes`, {
        method: "POST",
        headers: { authorization: `Bearer ${own}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const experiment = { seeds: Array.from({ length: 20 }, (_, i) => i + 1), train: { steps: 200, batchSize: 256 } };
    const uncapped = await (await post({ experiment: { ...experiment, budget: { rollouts: 2_000_000 } } })).json();
    const q = await (await post({ experiment: { ...experiment, budget: { rollouts: 1000 } } })).json();
    expect(uncapped.rollouts).toBe(2_000_000); // the plan's ~16 million, stopped at the largest cap a request may name
    expect(q.rollouts).toBe(1000);
    expect(q.chargeUsd).toBeLessThan(uncapped.chargeUsd / 1000);
    expect(q.caps).toMatchObject({
      plannedRollouts: uncapped.caps.plannedRollouts,
      rollouts: 1000,
      binding: ["rollouts"],
    });
    expect(q.caps.plannedRollouts).toBeGreaterThan(16_000_000);
    expect(q.caps.note).toMatch(/its budget stops it at 1000: quoted for those 1000/);
  });

  it("answers a bad period, granularity or format in the API's one error envelope, an invalid day as an invalid day (issue 52, item 15)", async () => {
    const refused = async (path: string) => {
      const res = await get(path, own);
      const body = await res.json();
      expect({ path, status: res.status, keys: Object.keys(body), code: body.error?.code }).toEqual({
        path,
        status: 400,
        keys: ["error"],
        code: "VALIDATION_FAILED",
      });
      return body.error.issues as string[];
    };
    expect(await refused("/v1/usage?granularity=hour")).toContain('granularity: Invalid input: expected "day"');
    expect(await refused("/v1/usage/export?from=2026-11-01&to=2026-12-31&format=xml")).toEqual([
      'format: Invalid option: expected one of "jsonl"|"csv"',
    ]);
    // An invalid day is said to be one, and nothing else is said of it (not "at most 366 days", not "after to")
    expect(await refused("/v1/usage?from=2026-13-45&to=2026-12-31")).toEqual([
      "from: not a calendar day (YYYY-MM-DD, UTC)",
    ]);
    expect(await refused("/v1/usage/export?from=2026-12-01&to=2026-02-30")).toEqual([
      "to: not a calendar day (YYYY-MM-DD, UTC)",
    ]);
    expect(await refused("/v1/usage/export?from=2026-01-01&to=2027-01-02")).toEqual(["to: at most 366 days"]);
    // A period parameter without the period is refused, not ignored (the totals take no parameter)
    expect(await refused("/v1/usage?keyId=bob")).toEqual(
      expect.arrayContaining([expect.stringMatching(/^from: /), expect.stringMatching(/^to: /)]),
    );
    // A bad key is still a 401 first, whatever the query
    expect((await fetch(`${api.url}/v1/usage?granularity=hour`)).status).toBe(401);
  });

  it("quotes an experiment for a key with the scope, on the defaults here; a rescue needs the rescues scope", async () => {
    const post = (body: unknown, secret = own) =>
      fetch(`${api.url}/v1/quotes`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const q = await post({ experiment: { seeds: [1, 2], arms: ["grpo"], train: { steps: 2, batchSize: 4 } } });
    expect(q.status).toBe(200);
    const body = await q.json();
    expect(body).toMatchObject({ basis: { source: "defaults", jobs: 0 } });
    expect(body.rollouts).toBeGreaterThan(1000);
    expect(body.chargeUsd).toBeGreaterThan(0);
    expect(body.caps).toMatchObject({ rollouts: 100_000, binding: [] }); // every API run has a cap, 100,000 unless named
    expect((await post({ rescue: { poolId: "p", taskId: "t", failureTags: ["x"] } })).status).toBe(403);
    expect((await post({ experiment: { seeds: [1] }, extra: 1 })).status).toBe(400);
    expect((await fetch(`${api.url}/v1/quotes`, { method: "POST", body: "{}" })).status).toBe(401);
    const { secret, record } = newApiKey("poor", ["experiments"]);
    await deps.keys.put({ ...record, budgetUsd: 0.0001 });
    const refused = await fetch(`${api.url}/v1/experiments`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ seeds: [1] }),
    });
    expect(refused.status).toBe(402);
    // Its limits, spent and left: a budget of 0.0001 USD with nothing spent, 0.0001 left.
    const limited = await (await get("/v1/usage", secret)).json();
    expect(limited).toMatchObject({ budgetUsd: 0.0001 });
    expect(limited.leftUsd).toBeCloseTo(0.0001 - limited.spentUsd, 12);
    expect(limited.leftUsd).toBeLessThanOrEqual(0.0001);
    expect((deps.coordinator as MemoryQueue).take()).toEqual([]); // nothing was queued
    expect(await deps.experiments.get("exp_1")).toBeUndefined();
  });
});
