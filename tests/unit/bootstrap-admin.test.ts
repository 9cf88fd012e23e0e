import { describe, expect, it } from "vitest";
import { MemoryApiKeyStore, MemoryKeyEventLog } from "@harness-s/adapters/stores";
import { ManualClock } from "@harness-s/core";
import { type ApiKeyStore, type KeyAccount, hashSecret, newApiKey } from "@harness-s/core/access";
import { awsConfigFromResources } from "../../functions/aws-config.ts";
import { createApp } from "../../functions/api/app.ts";
import { withAdminBootstrap } from "../../functions/api/lambda-deps.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";

// Issue 56 item 5: the deployment's first admin key, from the BootstrapAdminKeyHash secret the
// API Lambda reads at cold start (functions/api/lambda-deps.ts).

const SECRET = "hs_the-operators-first-admin-secret";
const HASH = hashSecret(SECRET);
const clock = new ManualClock(Date.parse("2026-12-06T12:00:00Z"));

/** A memory key store that counts lookups of the bootstrap hash and fails its first `failSaves` saves. */
class FlakyKeyStore extends MemoryApiKeyStore {
  bootstrapLookups = 0;
  constructor(private failSaves = 0) {
    super();
  }
  override async findByHash(hash: string) {
    if (hash === HASH) this.bootstrapLookups++;
    return super.findByHash(hash);
  }
  override async save(account: KeyAccount, expected: number | undefined) {
    if (this.failSaves > 0) {
      this.failSaves--;
      throw new Error("ProvisionedThroughputExceededException");
    }
    return super.save(account, expected);
  }
}

function api(stores: { keys: ApiKeyStore; keyEvents: MemoryKeyEventLog }) {
  const app = createApp(memoryApiDeps({ ...stores, clock }));
  return (method: string, path: string, secret: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: {
        authorization: `Bearer ${secret}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
}

describe("the first admin key of a deployment (BootstrapAdminKeyHash)", () => {
  it("is made at cold start from the configured hash; its secret then issues customer keys", async () => {
    const logs: string[] = [];
    const raw = { keys: new MemoryApiKeyStore(), keyEvents: new MemoryKeyEventLog() };
    const stores = await withAdminBootstrap(raw, HASH, clock, (l) => logs.push(l));
    expect(await raw.keys.list()).toEqual([
      expect.objectContaining({
        id: "bootstrap-admin",
        scopes: ["admin"],
        secrets: [{ hash: HASH, createdAt: clock.now() }],
      }),
    ]);
    expect(logs).toEqual([expect.stringMatching(/made the deployment's first admin key \(id bootstrap-admin\)/)]);
    const call = api(stores);
    const created = await call("POST", "/v1/keys", SECRET, { label: "acme", scopes: ["route", "rescues"] });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };
    expect((await call("GET", "/v1/keys", secret)).status).toBe(200);
    // The last admin key cannot be revoked; once another admin key exists, it can.
    expect((await call("DELETE", "/v1/keys/bootstrap-admin", SECRET)).status).toBe(409);
    const second = (await (await call("POST", "/v1/keys", SECRET, { label: "ops", scopes: ["admin"] })).json()) as {
      secret: string;
    };
    expect((await call("DELETE", "/v1/keys/bootstrap-admin", second.secret)).status).toBe(200);
    expect((await call("GET", "/v1/keys", SECRET)).status).toBe(401);
    // A later cold start with the same hash leaves the revoked key revoked.
    await withAdminBootstrap(raw, HASH, clock, (l) => logs.push(l));
    expect((await raw.keys.get("bootstrap-admin"))?.revokedAt).toBe(clock.now());
    expect((await call("GET", "/v1/keys", SECRET)).status).toBe(401);
  });

  it("is made once when two containers start at once over the same tables", async () => {
    const logs: string[] = [];
    const raw = { keys: new MemoryApiKeyStore(), keyEvents: new MemoryKeyEventLog() };
    await Promise.all([
      withAdminBootstrap(raw, HASH, clock, (l) => logs.push(l)),
      withAdminBootstrap(raw, HASH, clock, (l) => logs.push(l)),
    ]);
    expect((await raw.keys.list()).map((a) => a.id)).toEqual(["bootstrap-admin"]);
    expect(await raw.keyEvents.list("bootstrap-admin", 10)).toEqual([
      expect.objectContaining({
        keyId: "bootstrap-admin",
        at: clock.now(),
        action: "created",
        changes: { scopes: ["admin"] },
      }),
    ]);
    expect(logs).toHaveLength(1);
  });

  it("after a cold start that could not make it, logs and goes on, and makes it before the next key lookup", async () => {
    const logs: string[] = [];
    const keys = new FlakyKeyStore(1);
    const raw = { keys, keyEvents: new MemoryKeyEventLog() };
    const stores = await withAdminBootstrap(raw, HASH, clock, (l) => logs.push(l));
    expect(await keys.list()).toEqual([]);
    expect(logs).toEqual([
      expect.stringMatching(
        /could not be made yet; tried again before the next key lookup: ProvisionedThroughputExceededException/,
      ),
    ]);
    // Two requests at once: one retry between them, then the bootstrap secret works.
    const call = api(stores);
    const answers = await Promise.all([call("GET", "/v1/keys", SECRET), call("GET", "/v1/keys", SECRET)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect((await keys.list()).map((a) => a.id)).toEqual(["bootstrap-admin"]);
    // Once made, this container asks no more: further lookups read the presented key only.
    const lookups = keys.bootstrapLookups;
    const { secret, record } = newApiKey("customer", ["route"]);
    await keys.put(record);
    for (let i = 0; i < 3; i++) expect((await call("GET", "/v1/keys", secret)).status).toBe(200);
    expect(keys.bootstrapLookups).toBe(lookups);
  });

  it("never fails a request while the store refuses it: other keys keep working, the bootstrap secret is a 401", async () => {
    const logs: string[] = [];
    const keys = new FlakyKeyStore(Number.POSITIVE_INFINITY);
    const stores = await withAdminBootstrap({ keys, keyEvents: new MemoryKeyEventLog() }, HASH, clock, (l) =>
      logs.push(l),
    );
    const { secret, record } = newApiKey("customer", ["route"]);
    await keys.put(record);
    const call = api(stores);
    expect((await call("GET", "/v1/keys", secret)).status).toBe(200);
    expect((await call("GET", "/v1/keys", SECRET)).status).toBe(401);
    expect(logs.length).toBeGreaterThanOrEqual(3);
  });

  it("makes nothing without a hash", async () => {
    const raw = { keys: new MemoryApiKeyStore(), keyEvents: new MemoryKeyEventLog() };
    expect(await withAdminBootstrap(raw, undefined, clock)).toBe(raw);
    expect(await raw.keys.list()).toEqual([]);
  });
});

describe("the BootstrapAdminKeyHash secret as the API reads it", () => {
  // SST's Resource reads the links from this object (the same one across files sharing the module graph).
  const sst = globalThis as { __SST_RESOURCE_RAW__?: Record<string, unknown> };
  sst.__SST_RESOURCE_RAW__ ??= {};
  const raw = sst.__SST_RESOURCE_RAW__;
  const withSecret = <T>(value: string | undefined, read: () => T): T => {
    if (value === undefined) delete raw.BootstrapAdminKeyHash;
    else raw.BootstrapAdminKeyHash = { value };
    try {
      return read();
    } finally {
      delete raw.BootstrapAdminKeyHash;
    }
  };

  it("is absent when unlinked, unset or empty; taken as lowercase hex, blanks trimmed", () => {
    expect(withSecret(undefined, awsConfigFromResources).bootstrapAdminKeyHash).toBeUndefined();
    expect(withSecret("unset", awsConfigFromResources).bootstrapAdminKeyHash).toBeUndefined();
    expect(withSecret("", awsConfigFromResources).bootstrapAdminKeyHash).toBeUndefined();
    expect(withSecret(` ${HASH.toUpperCase()}\n`, awsConfigFromResources).bootstrapAdminKeyHash).toBe(HASH);
  });

  it("fails the cold start with what to fix when it is not 64 hex characters (the secret itself, or a hash cut short)", () => {
    for (const value of [SECRET, HASH.slice(0, 63), `${HASH}0`, `${HASH.slice(0, 63)}g`])
      expect(() => withSecret(value, awsConfigFromResources)).toThrow(
        /the function's configuration is not valid:\n.*the BootstrapAdminKeyHash secret must be the SHA-256 hex digest of the admin secret: 64 hex characters.*\n.*at bootstrapAdminKeyHash/,
      );
  });
});
