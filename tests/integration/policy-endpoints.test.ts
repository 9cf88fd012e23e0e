import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import { MemoryPolicyEndpointStore } from "@harness-s/adapters/stores";
import { systemClock, type Environment } from "@harness-s/core";
import { addKey, memoryApiDeps, startApi } from "../api-factory.ts";

// Issue 31, items 1-2: a key registers the policy endpoints its rescues sample from; each is
// probed through the outbound guard; its secret is stored and never returned.
const SECRET = "sk-very-secret-value-123";
const seen: { path: string; auth?: string }[] = [];
let reply: (path: string) => unknown = () => ({});
let fake: Server;
let fakeUrl: string;
let api: Awaited<ReturnType<typeof startApi>>;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  fake = createServer((req, res) => {
    seen.push({ path: req.url ?? "", auth: req.headers["x-api-key"] as string | undefined });
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply(req.url ?? ""))),
    );
  });
  await new Promise<void>((r) => fake.listen(0, "127.0.0.1", () => r()));
  fakeUrl = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
  const deps = memoryApiDeps({ prober: new HttpEndpointProber({ allowLoopback: true }, systemClock) });
  keyA = await addKey(deps, "k-a", ["rescues"]);
  keyB = await addKey(deps, "k-b", ["rescues"]);
  api = await startApi(deps);
});
afterAll(async () => {
  await api?.close();
  fake?.close();
});

const call = (secret: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}/v1/policy-endpoints${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
/** Every kind of policy endpoint (the SSRF tests run over each). */
const KINDS = ["protocol-v2", "vllm", "sglang", "openai-chat"] as const;
const v2State = {
  policy_id: "p1",
  version: 7,
  tokenizer: { name: "tiny", eos_ids: [2] },
  capabilities: { sample: true },
};

describe("policy endpoints", () => {
  it("registers a protocol-v2 endpoint after probing its policy, sends the secret header, and never returns it", async () => {
    reply = (path) => (path === "/v2/policies/p1" ? v2State : {});
    const res = await call(keyA, "POST", "", {
      id: "mine",
      kind: "protocol-v2",
      url: fakeUrl,
      policy: "p1",
      secretHeader: { name: "x-api-key", value: SECRET },
    });
    const text = await res.text();
    expect(res.status).toBe(201);
    expect(JSON.parse(text)).toMatchObject({
      id: "mine",
      probe: { weightVersion: 7 },
      secretHeader: { name: "x-api-key" },
    });
    expect(text).not.toContain(SECRET);
    expect(seen.at(-1)).toEqual({ path: "/v2/policies/p1", auth: SECRET });
    for (const read of [await call(keyA, "GET", ""), await call(keyA, "GET", "/mine")])
      expect(await read.text()).not.toContain(SECRET);
    // Another key sees nothing of it.
    expect((await call(keyB, "GET", "/mine")).status).toBe(404);
    expect(await (await call(keyB, "GET", "")).json()).toEqual({ endpoints: [] });
    expect((await call(keyB, "DELETE", "/mine")).status).toBe(404);
    expect((await call(keyA, "DELETE", "/mine")).status).toBe(200);
    expect((await call(keyA, "GET", "/mine")).status).toBe(404);
  });

  it("refuses an OpenAI-compatible endpoint that returns no token ids (ENDPOINT_NO_TOKEN_IDS), and takes one that does, at the version its model names", async () => {
    reply = () => ({
      model: "p1",
      choices: [{ message: { content: "x" }, logprobs: { content: [{ logprob: -0.1 }] } }],
    });
    const textOnly = await call(keyA, "POST", "", {
      id: "chat",
      kind: "openai-chat",
      url: `${fakeUrl}/v1`,
      policy: "p1",
    });
    expect(textOnly.status).toBe(400);
    expect((await textOnly.json()).error.code).toBe("ENDPOINT_NO_TOKEN_IDS");
    reply = () => ({
      model: "p1@v3",
      prompt_token_ids: [1, 2],
      choices: [{ token_ids: [5], message: { content: "x" }, logprobs: { content: [{ logprob: -0.1 }] } }],
    });
    const ok = await call(keyA, "POST", "", { id: "chat", kind: "openai-chat", url: `${fakeUrl}/v1`, policy: "p1" });
    expect(ok.status).toBe(201);
    expect((await ok.json()).probe.weightVersion).toBe(3);
    // A policy that is not there: the probe's failure names the status, not the endpoint's own words.
    reply = () => ({ error: "nope" });
    const broken = await call(keyA, "POST", "", { id: "broken", kind: "protocol-v2", url: fakeUrl, policy: "p1" });
    expect((await broken.json()).error.code).toBe("ENDPOINT_PROBE_FAILED");
  });

  it("refuses every private or loopback form at registration with URL_NOT_ALLOWED when loopback is not allowed, reaching no listener, for every kind", async () => {
    const strict = memoryApiDeps();
    const k = await addKey(strict, "k-s", ["rescues"]);
    const strictApi = await startApi(strict);
    const port = new URL(fakeUrl).port;
    const before = seen.length;
    try {
      for (const url of [
        fakeUrl,
        `http://2130706433:${port}`,
        `http://0x7f.1:${port}`,
        `http://[::ffff:127.0.0.1]:${port}`,
        "http://169.254.169.254",
        "http://10.1.2.3",
        "http://[fd00::1]",
        "file:///etc/passwd",
      ])
        for (const kind of KINDS) {
          const res = await fetch(`${strictApi.url}/v1/policy-endpoints`, {
            method: "POST",
            headers: { authorization: `Bearer ${k}`, "content-type": "application/json" },
            body: JSON.stringify({ id: "x", kind, url, policy: "p1" }),
          });
          expect(res.status, `${kind} ${url}`).toBe(400);
          expect((await res.json()).error.code, `${kind} ${url}`).toBe("URL_NOT_ALLOWED");
        }
      expect(seen.length).toBe(before);
    } finally {
      await strictApi.close();
    }
  });

  it("refuses at use, with URL_NOT_ALLOWED, an endpoint of every kind whose name resolves to a private address after registration, and an environment that does; nothing reaches a listener there", async () => {
    // The name pointed elsewhere when it was registered (the probe stands in for that answer);
    // now it resolves to loopback, where this test listens.
    const endpoints = new MemoryPolicyEndpointStore();
    const outbound = { allowLoopback: false, resolve: async () => ["127.0.0.1"] };
    const port = new URL(fakeUrl).port;
    const deps = memoryApiDeps({
      endpoints,
      prober: { probe: async () => ({ weightVersion: 0, checkedAt: Date.now() }) },
      // A built-in environment this test never steps (the rescue is refused before any rollout).
      callers: new CallerPolicyRunners({
        endpoints,
        outbound,
        clock: systemClock,
        builtin: { embedded: {} as Environment },
      }),
    });
    const k = await addKey(deps, "k-use", ["rescues"]);
    const useApi = await startApi(deps);
    const before = seen.length;
    const post = (path: string, body: unknown) =>
      fetch(`${useApi.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${k}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    try {
      for (const kind of KINDS) {
        const id = `moved-${kind}`;
        expect(
          (await post("/v1/policy-endpoints", { id, kind, url: `http://policy.example.test:${port}`, policy: "p1" }))
            .status,
        ).toBe(201);
        const task = { id: "t1", family: "app", tools: [{ name: "submit", submit: true }] };
        // A kind whose replies state no version is pinned by the rescue (and so asks the endpoint nothing when it
        // starts).
        const pin = kind === "protocol-v2" ? {} : { weightVersion: 0, servedModel: "p1@v0" };
        const rescue = (environment: unknown) =>
          post("/v1/rescues", {
            poolId: "embedded",
            failureTags: ["x"],
            caller: { endpoint: id, environment, task, ...pin },
          });
        for (const environment of [
          { kind: "builtin", id: "embedded" }, // the environment is fine: the endpoint is refused
          { kind: "openenv", url: `http://envs.example.test:${port}` },
          { kind: "openenv", url: `http://127.0.0.1:${port}` },
          { kind: "openenv", url: `http://0x7f000001:${port}` },
        ]) {
          const res = await rescue(environment);
          expect([res.status, (await res.json()).error.code], `${kind} ${JSON.stringify(environment)}`).toEqual([
            400,
            "URL_NOT_ALLOWED",
          ]);
        }
      }
      expect(seen.length).toBe(before);
    } finally {
      await useApi.close();
    }
  });
});

// Issue 52, items 10-12, over HTTP with loopback allowed (as `serve --allow-loopback-endpoints`).
// A name stands for each non-loopback address (a stub resolver answers 127.0.0.1 first, then the
// address): a guard that let the address through would reach this test's loopback listener, never
// the address itself.
describe("registration refuses what the guard or the HTTP client would change (issue 52)", () => {
  const register = (apiUrl: string, secret: string, body: Record<string, unknown>) =>
    fetch(`${apiUrl}/v1/policy-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ id: "x", kind: "protocol-v2", policy: "p1", ...body }),
    });
  const answer = async (res: Response) => {
    const body = await res.json();
    return {
      status: res.status,
      code: body.error?.code ?? "ok",
      message: String(body.error?.message ?? ""),
      url: body.url as string | undefined,
    };
  };

  it("an IPv6 form that embeds 127.x or sits in a private block is refused, URL_NOT_ALLOWED, with loopback allowed; the listener gets nothing", async () => {
    const port = new URL(fakeUrl).port;
    const answers: Record<string, string[]> = { "plain.test": ["127.0.0.1"] };
    const embedded = [
      "64:ff9b::7f00:1",
      "2002:7f00:1::",
      "::127.0.0.1",
      "64:ff9b:1::7f00:1",
      "::ffff:0:7f00:1",
      "::ffff:127.0.0.1",
      "2001:0:4136:e378:8000:63bf:80ff:fffe",
      "3fff::1",
    ];
    for (const [i, address] of embedded.entries()) answers[`e${i}.test`] = ["127.0.0.1", address];
    const deps = memoryApiDeps({
      prober: new HttpEndpointProber(
        { allowLoopback: true, resolve: async (host) => answers[host] ?? [] },
        systemClock,
      ),
    });
    const k = await addKey(deps, "k-v6", ["rescues"]);
    const v6Api = await startApi(deps);
    reply = (path) => (path === "/v2/policies/p1" ? v2State : {});
    const before = seen.length;
    try {
      const got = [];
      for (const [i, address] of embedded.entries()) {
        const { status, code, message } = await answer(
          await register(v6Api.url, k, { url: `http://e${i}.test:${port}` }),
        );
        got.push([address, status, code, message.includes(`resolves to ${address}`)]);
      }
      expect(got).toEqual(embedded.map((address) => [address, 400, "URL_NOT_ALLOWED", true]));
      expect(seen.length).toBe(before);
      // The same setup reaches a name that answers loopback only.
      expect((await answer(await register(v6Api.url, k, { url: `http://plain.test:${port}` }))).status).toBe(201);
    } finally {
      await v6Api.close();
    }
  });

  it("a secret header the HTTP client owns, a name that is no token, or a value with CR, LF, NUL or padding is 400 VALIDATION_FAILED naming it; nothing is sent", async () => {
    reply = (path) => (path === "/v2/policies/p1" ? v2State : {});
    const before = seen.length;
    const names = [
      "content-length",
      "transfer-encoding",
      "connection",
      "expect",
      "upgrade",
      "keep-alive",
      "host",
      "te",
      "trailer",
      "proxy-authorization",
      "Proxy-Connection",
      "Sec-WebSocket-Key",
      "Content-Length",
    ];
    const refusedAs = async (secretHeader: { name: string; value: string }, named: string) => {
      const got = await answer(await register(api.url, keyA, { url: fakeUrl, secretHeader }));
      return [JSON.stringify(secretHeader), got.status, got.code, got.message.includes(named)];
    };
    const byName = await Promise.all(
      names.map((name) => refusedAs({ name, value: "1" }, `secretHeader.name: "${name.toLowerCase()}"`)),
    );
    expect(byName).toEqual(names.map((name) => [JSON.stringify({ name, value: "1" }), 400, "VALIDATION_FAILED", true]));
    const notTokens = ["x key", "x:y", "x\r\ny", "", "ключ"];
    const byToken = await Promise.all(notTokens.map((name) => refusedAs({ name, value: "1" }, "secretHeader.name")));
    expect(byToken).toEqual(
      notTokens.map((name) => [JSON.stringify({ name, value: "1" }), 400, "VALIDATION_FAILED", true]),
    );
    const values = ["t0k\r\nx-injected: 1", "t0k\nx", "t0k\rx", "t0k\0", " t0k", "t0k\t", "t0k\u0085", "tök"];
    const byValue = await Promise.all(
      values.map((value) => refusedAs({ name: "x-api-key", value }, "secretHeader.value")),
    );
    expect(byValue).toEqual(
      values.map((value) => [JSON.stringify({ name: "x-api-key", value }), 400, "VALIDATION_FAILED", true]),
    );
    // An environment's secret header is the same schema.
    const task = { id: "t1", family: "app", tools: [{ name: "submit", submit: true }] };
    const rescue = await fetch(`${api.url}/v1/rescues`, {
      method: "POST",
      headers: { authorization: `Bearer ${keyA}`, "content-type": "application/json" },
      body: JSON.stringify({
        poolId: "embedded",
        failureTags: ["x"],
        caller: {
          endpoint: "mine",
          environment: { kind: "openenv", url: fakeUrl, secretHeader: { name: "upgrade", value: "h2c" } },
          task,
        },
      }),
    });
    const got = await answer(rescue);
    expect([got.status, got.code], got.message).toEqual([400, "VALIDATION_FAILED"]);
    expect(got.message).toContain('"upgrade"');
    expect(seen.length).toBe(before);
  });

  it("stores the canonical URL the guard checked, and refuses spellings a parser would silently change (whitespace, controls, backslashes, Unicode, a query)", async () => {
    const port = new URL(fakeUrl).port;
    reply = (path) => (path.endsWith("/v2/policies/p1") ? v2State : {});
    const canonical: [string, string][] = [
      [`HTTP://127.0.0.1:${port}/A/../v2/`, `http://127.0.0.1:${port}/v2/`],
      [`http://%31%32%37.0.0.1:${port}`, `http://127.0.0.1:${port}/`],
      [`http://127.0.0.1:0${port}/v1/./`, `http://127.0.0.1:${port}/v1/`],
    ];
    const got = [];
    for (const [typed] of canonical) {
      const registered = await answer(await register(api.url, keyA, { id: "canon", url: typed }));
      got.push([typed, registered.status, registered.url, (await (await call(keyA, "GET", "/canon")).json()).url]);
    }
    expect(got).toEqual(canonical.map(([typed, stored]) => [typed, 201, stored, stored]));
    const before = seen.length;
    const typedUrls = [
      ` ${fakeUrl}`,
      `\t${fakeUrl}`,
      `${fakeUrl}\n`,
      `http://127.0.0.1:${port}/v\n2`,
      `http://127.0.0.1:${port}/v\t2`,
      `http:\\\\127.0.0.1:${port}\\`,
      `http://127.0.0.1:${port}\\v2`,
      `http://１２７.０.０.１:${port}`,
      `http://127.0.0.1:${port}/\u00a0`,
      `${fakeUrl}/?api-version=1`,
      `${fakeUrl}/#v2`,
    ];
    const refused = [];
    for (const typed of typedUrls) {
      const { status, code, message } = await answer(await register(api.url, keyA, { id: "typed", url: typed }));
      refused.push([typed, status, code, message.includes("url: not accepted")]);
    }
    expect(refused).toEqual(typedUrls.map((typed) => [typed, 400, "VALIDATION_FAILED", true]));
    expect(seen.length).toBe(before);
    expect((await call(keyA, "GET", "/typed")).status).toBe(404);
    // An environment's URL is read the same way.
    const task = { id: "t1", family: "app", tools: [{ name: "submit", submit: true }] };
    const rescue = await fetch(`${api.url}/v1/rescues`, {
      method: "POST",
      headers: { authorization: `Bearer ${keyA}`, "content-type": "application/json" },
      body: JSON.stringify({
        poolId: "embedded",
        failureTags: ["x"],
        caller: { endpoint: "canon", environment: { kind: "openenv", url: ` ${fakeUrl}` }, task },
      }),
    });
    const envGot = await answer(rescue);
    expect([envGot.status, envGot.code, envGot.message.includes("url: not accepted")], envGot.message).toEqual([
      400,
      "VALIDATION_FAILED",
      true,
    ]);
    await call(keyA, "DELETE", "/canon");
  });
});

// Issue 55, item 6, over HTTP: the operator's allowlist (`serve --allow-endpoint-cidr`, the
// deployment's EndpointCidrs) lets an endpoint on a cluster's 10.x network register; an instance
// metadata address never does. A stub resolver answers 127.0.0.1 first, then the address: the
// guard judges both, the probe connects to this test's loopback listener, never to the address.
describe("registration with an endpoint allowlist (issue 55, item 6)", () => {
  const answers: Record<string, string[]> = {
    "cluster.test": ["127.0.0.1", "10.1.2.3"],
    "meta.test": ["127.0.0.1", "169.254.169.254"],
    "meta6.test": ["127.0.0.1", "fd00:ec2::254"],
  };
  const withCidrs = async (
    allowCidrs: string[],
    run: (register: (host: string) => Promise<{ status: number; code: string; message: string }>) => Promise<void>,
  ) => {
    const deps = memoryApiDeps({
      prober: new HttpEndpointProber(
        { allowLoopback: true, allowCidrs, resolve: async (host) => answers[host] ?? [] },
        systemClock,
      ),
    });
    const k = await addKey(deps, "k-cidr", ["rescues"]);
    const cidrApi = await startApi(deps);
    const port = new URL(fakeUrl).port;
    try {
      await run(async (host) => {
        const res = await fetch(`${cidrApi.url}/v1/policy-endpoints`, {
          method: "POST",
          headers: { authorization: `Bearer ${k}`, "content-type": "application/json" },
          body: JSON.stringify({
            id: host.split(".")[0],
            kind: "protocol-v2",
            policy: "p1",
            url: `http://${host}:${port}`,
          }),
        });
        const body = await res.json();
        return { status: res.status, code: body.error?.code ?? "ok", message: String(body.error?.message ?? "") };
      });
    } finally {
      await cidrApi.close();
    }
  };

  it("registers a 10.x endpoint allowed by CIDR; refuses it without; never registers 169.254.169.254 or fd00:ec2::254, even under 169.254.0.0/16 and everything", async () => {
    reply = (path) => (path === "/v2/policies/p1" ? v2State : {});
    const before = seen.length;
    await withCidrs(["10.0.0.0/8"], async (register) => {
      expect(await register("cluster.test")).toEqual({ status: 201, code: "ok", message: "" });
      expect(await register("meta.test")).toMatchObject({ status: 400, code: "URL_NOT_ALLOWED" });
    });
    await withCidrs([], async (register) => {
      expect(await register("cluster.test")).toMatchObject({
        status: 400,
        code: "URL_NOT_ALLOWED",
        message: expect.stringContaining("10.1.2.3 (private)"),
      });
    });
    await withCidrs(["10.0.0.0/8", "169.254.0.0/16", "fd00::/8", "0.0.0.0/0", "::/0"], async (register) => {
      for (const host of ["meta.test", "meta6.test"])
        expect(await register(host), host).toMatchObject({
          status: 400,
          code: "URL_NOT_ALLOWED",
          message: expect.stringContaining("(instance metadata: never allowed)"),
        });
      expect((await register("cluster.test")).status).toBe(201);
    });
    // Only the two registrations that passed probed the listener.
    expect(seen.length).toBe(before + 2);
  });
});
