import { describe, expect, it } from "vitest";
import { ManualClock, hasUnshowable } from "@harness-s/core";
import { KeyRateLimiter, hashSecret } from "@harness-s/core/access";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { keyTable } from "../../packages/cli/src/commands/keys-format.ts";
import { API_LAMBDA_MAX_BODY_BYTES } from "../../infra/settings.ts";

// Issue 67 items 1 to 6: keys that cannot lock a deployment out, that make no key beyond their
// own limits, and whose settings the stores can hold and a terminal can show. The API over the
// in-memory stores; the same rules over DynamoDB Local and two API instances are in
// tests/integration/key-lifecycle.test.ts.

const ROOT = "hs_root-secret-of-the-key-guards-test";

async function setup() {
  const clock = new ManualClock(Date.parse("2026-12-07T12:00:00Z"));
  // The deployed API's body bound: 20,000 scopes (180 KB) fit under it.
  const deps = memoryApiDeps({ clock, maxBodyBytes: API_LAMBDA_MAX_BODY_BYTES });
  await deps.keys.put({ id: "root", hash: hashSecret(ROOT), scopes: ["admin"] });
  const app = createApp(deps);
  const call = async (secret: string, method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: {
        authorization: `Bearer ${secret}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, any>;
    return {
      status: res.status,
      body: json,
      code: json.error?.code as string | undefined,
      retryAfter: res.headers.get("retry-after"),
    };
  };
  const create = async (settings: Record<string, unknown>, by = ROOT) => {
    const r = await call(by, "POST", "/v1/keys", settings);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { id: r.body.key.id as string, secret: r.body.secret as string };
  };
  const works = async (secret: string) => (await call(secret, "GET", "/v1/keys")).status === 200;
  return { clock, deps, call, create, works };
}

const inAnHour = (clock: ManualClock) => new Date(clock.now() + 3_600_000).toISOString();

describe("at least one working admin key without an expiry, always", () => {
  it("two admins revoking each other at once: one revoke wins, the other is a 409, and an admin still works", async () => {
    const s = await setup();
    const a = await s.create({ scopes: ["admin"] });
    expect((await s.call(ROOT, "DELETE", "/v1/keys/root")).status).toBe(200);
    const b = await s.create({ scopes: ["admin"] }, a.secret);
    const [ab, ba] = await Promise.all([
      s.call(a.secret, "DELETE", `/v1/keys/${b.id}`),
      s.call(b.secret, "DELETE", `/v1/keys/${a.id}`),
    ]);
    expect([ab.status, ba.status].sort()).toEqual([200, 409]);
    expect([ab.code, ba.code]).toContain("CONFLICT");
    expect((await s.works(a.secret)) || (await s.works(b.secret))).toBe(true);
  });

  it("the last admin cannot give itself an expiry; an admin with one cannot revoke the last one without; neither can lose its scope", async () => {
    const s = await setup();
    const own = await s.call(ROOT, "PATCH", "/v1/keys/root", {
      expiresAt: new Date(s.clock.now() + 5_000).toISOString(),
    });
    expect([own.status, own.code, own.body.error.message]).toEqual([
      409,
      "CONFLICT",
      expect.stringContaining("last working admin key without an expiry"),
    ]);
    const b = await s.create({ scopes: ["admin"], expiresAt: inAnHour(s.clock) });
    expect((await s.call(b.secret, "DELETE", "/v1/keys/root")).status).toBe(409);
    expect((await s.call(ROOT, "PATCH", "/v1/keys/root", { scopes: ["route"] })).status).toBe(409);
    s.clock.advance(3_600_000);
    expect(await s.works(ROOT)).toBe(true);
    // Once another admin key without an expiry exists, either may go.
    const c = await s.create({ scopes: ["admin"] });
    expect((await s.call(c.secret, "PATCH", "/v1/keys/root", { expiresAt: inAnHour(s.clock) })).status).toBe(200);
    expect((await s.call(c.secret, "DELETE", "/v1/keys/root")).status).toBe(200);
  });
});

describe("a key makes, changes and takes the secrets of keys only within its own scopes and limits", () => {
  it("a limited admin cannot make an unlimited admin (which could lift its limits), nor unlimit, nor take the secret of a key with more", async () => {
    const s = await setup();
    const limited = await s.create({
      scopes: ["admin"],
      budgetUsd: 5,
      requestQuota: 1000,
      rate: { perSecond: 50, burst: 50 },
    });
    const made = await s.call(limited.secret, "POST", "/v1/keys", { scopes: ["admin"] });
    expect([made.status, made.code]).toEqual([403, "FORBIDDEN"]);
    expect(
      (
        await s.call(limited.secret, "POST", "/v1/keys", {
          scopes: ["admin"],
          budgetUsd: 6,
          requestQuota: 1000,
          rate: { perSecond: 50, burst: 50 },
        })
      ).status,
    ).toBe(403);
    const within = await s.create(
      { scopes: ["route"], budgetUsd: 1, requestQuota: 10, rate: { perSecond: 5, burst: 5 } },
      limited.secret,
    );
    expect((await s.call(limited.secret, "PATCH", `/v1/keys/${within.id}`, { budgetUsd: null })).status).toBe(403);
    expect((await s.call(limited.secret, "PATCH", `/v1/keys/${within.id}`, { budgetUsd: 2 })).status).toBe(200);
    const unlimited = await s.create({ scopes: ["route"] });
    expect((await s.call(limited.secret, "POST", `/v1/keys/${unlimited.id}/rotate`, {})).status).toBe(403);
    expect((await s.call(limited.secret, "POST", `/v1/keys/${within.id}/rotate`, {})).status).toBe(200);
    expect((await s.call(limited.secret, "PATCH", `/v1/keys/${limited.id}`, { budgetUsd: null })).status).toBe(403);
  });
});

describe("a key's settings are what a store can hold and a terminal can show", () => {
  const refused: [string, Record<string, unknown>][] = [
    ["budget 1e16", { budgetUsd: 1e16 }],
    ["budget 1e308", { budgetUsd: 1e308 }],
    ["budget 1e-320", { budgetUsd: 1e-320 }],
    ["budget 1e-7 (under a micro-dollar)", { budgetUsd: 1e-7 }],
    ["quota 1e13", { requestQuota: 1e13 }],
    ["rate 1e-300 a second", { rate: { perSecond: 1e-300, burst: 1 } }],
    ["rate 1e-100 a second", { rate: { perSecond: 1e-100, burst: 1 } }],
    ["a label with NUL", { label: "a\u0000b" }],
    ["a label with ESC", { label: "\u001b[31mred" }],
    ["a label with CR/LF", { label: "line\r\nINFO fake" }],
    ["a label with a bidi override", { label: "evil\u202etxt.exe" }],
    ["20,000 copies of a scope", { scopes: Array.from({ length: 20_000 }, () => "route") }],
    ["a scope twice", { scopes: ["route", "route"] }],
  ];
  for (const [what, settings] of refused)
    it(`${what}: a 400 on create and on update, and nothing written`, async () => {
      const s = await setup();
      const before = (await s.deps.keys.list()).length;
      const created = await s.call(ROOT, "POST", "/v1/keys", { scopes: ["route"], ...settings });
      expect([created.status, created.code]).toEqual([400, "VALIDATION_FAILED"]);
      expect((await s.deps.keys.list()).length).toBe(before);
      const k = await s.create({ scopes: ["route"] });
      const updated = await s.call(ROOT, "PATCH", `/v1/keys/${k.id}`, settings);
      expect([updated.status, updated.code]).toEqual([400, "VALIDATION_FAILED"]);
    });

  it("an expiry in the past is refused on create and update (a key born expired); one ahead is taken", async () => {
    const s = await setup();
    const past = new Date(s.clock.now() - 1).toISOString();
    expect((await s.call(ROOT, "POST", "/v1/keys", { scopes: ["route"], expiresAt: past })).status).toBe(400);
    const k = await s.create({ scopes: ["route"], expiresAt: inAnHour(s.clock) });
    expect((await s.call(ROOT, "PATCH", `/v1/keys/${k.id}`, { expiresAt: past })).status).toBe(400);
  });

  it("a key stored with a rate slower than today's bound is told to wait at most 1,000 s, a whole number", () => {
    const limiter = new KeyRateLimiter(new ManualClock(0));
    const key = { id: "old", rate: { perSecond: 1e-100, burst: 1 } };
    limiter.take(key);
    let retryAfter: number | undefined;
    try {
      limiter.take(key);
    } catch (err) {
      retryAfter = (err as { retryAfterSeconds: number }).retryAfterSeconds;
    }
    expect(retryAfter).toBe(1000);
  });

  it("keys list shows a stored label's control and bidi characters as escapes, never raw", () => {
    const lines = keyTable([
      {
        id: "k1",
        label: "\u001b[2Jx\u202e\r\n",
        scopes: ["route"],
        status: "active",
        createdAt: "2026-12-07T00:00:00.000Z",
        secrets: [],
      },
    ]);
    expect(hasUnshowable(lines.join(""))).toBe(false);
    expect(lines[1]).toContain("\\u001b[2Jx\\u202e\\u000d\\u000a");
  });
});
