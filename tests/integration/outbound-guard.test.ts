import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UrlNotAllowedError, checkOutboundUrl, forbiddenRange, outboundFetch } from "@harness-s/adapters";

// Issue 31, item 2: a URL a caller names is refused when it points at this host or its network,
// in any spelling, at registration and at every connection; nothing reaches a listener there.
const listeners: { server: Server; hits: number; port: number }[] = [];
const listen = (host: string) =>
  new Promise<(typeof listeners)[number]>((resolve) => {
    const entry = { server: createServer((req, res) => res.end(req.url === "/redirect" ? "" : "reached")), hits: 0, port: 0 };
    entry.server.on("request", () => entry.hits++);
    entry.server.listen(0, host, () => {
      entry.port = (entry.server.address() as { port: number }).port;
      listeners.push(entry);
      resolve(entry);
    });
  });
let v4: (typeof listeners)[number];
let v6: (typeof listeners)[number];
beforeAll(async () => {
  v4 = await listen("127.0.0.1");
  v6 = await listen("::1");
});
afterAll(() => Promise.all(listeners.map((l) => new Promise((r) => l.server.close(r)))));

describe("outbound requests to caller-named endpoints", () => {
  it("refuses loopback, private, link-local, CGNAT, multicast and unspecified addresses in every spelling, before connecting", async () => {
    const p = v4.port;
    const refused = [
      `http://127.0.0.1:${p}/`,
      `http://2130706433:${p}/`, // decimal
      `http://0177.0.0.1:${p}/`, // octal
      `http://0x7f.0.0.1:${p}/`, // hex
      `http://127.1:${p}/`, // short form
      `http://127.000.000.001:${p}/`,
      `http://localhost:${p}/`,
      `http://localhost.:${p}/`, // trailing dot
      `http://[::ffff:127.0.0.1]:${p}/`, // IPv4-mapped IPv6
      `http://[::ffff:7f00:1]:${p}/`,
      `http://[::1]:${v6.port}/`,
      `http://[0:0:0:0:0:0:0:1]:${v6.port}/`,
      "http://169.254.169.254/latest/meta-data/", // the instance metadata address
      "http://10.0.0.7/",
      "http://172.16.5.5/",
      "http://192.168.1.1/",
      "http://100.64.0.1/", // CGNAT
      "http://224.0.0.1/", // multicast
      "http://0.0.0.0/",
      "http://0/",
      "http://[::]/",
      "http://[fd12:3456::1]/", // ULA
      "http://[fe80::1]/",
      "http://[64:ff9b::7f00:1]/", // NAT64 of 127.0.0.1
      "http://[2002:7f00:1::]/", // 6to4 of 127.0.0.1
      `ftp://127.0.0.1:${p}/`,
      `http://user:pass@example.com/`,
    ];
    const guarded = outboundFetch({ allowLoopback: false });
    for (const url of refused) {
      await expect(checkOutboundUrl(url, { allowLoopback: false }), url).rejects.toBeInstanceOf(UrlNotAllowedError);
      await expect(guarded(url), url).rejects.toBeInstanceOf(UrlNotAllowedError);
    }
    expect(listeners.map((l) => l.hits)).toEqual([0, 0]);
    // Public addresses pass the range check (nothing here connects to them).
    expect([forbiddenRange("93.184.216.34"), forbiddenRange("2606:4700::1111")]).toEqual([undefined, undefined]);
  });

  it("checks every connection again: a name that resolved to a public address, then to loopback (DNS rebinding), is refused and never reached", async () => {
    // Public at registration and when the request is checked; loopback by the time the socket connects.
    let lookups = 0;
    const rebinding = { allowLoopback: false, resolve: async () => (lookups++ < 2 ? ["93.184.216.34"] : ["127.0.0.1"]) };
    await expect(checkOutboundUrl(`http://rebind.test:${v4.port}/`, rebinding)).resolves.toBeInstanceOf(URL);
    const err = await outboundFetch(rebinding)(`http://rebind.test:${v4.port}/`).catch((e: Error) => e);
    expect(String((err as Error & { cause?: unknown }).cause ?? err)).toMatch(/127\.0\.0\.1 \(loopback\)/);
    expect(lookups).toBe(3);
    expect(v4.hits).toBe(0);
  });

  it("with loopback allowed (serve --allow-loopback-endpoints) reaches it, but follows no redirect and reads a bounded reply", async () => {
    const local = outboundFetch({ allowLoopback: true });
    expect(await (await local(`http://127.0.0.1:${v4.port}/`)).text()).toBe("reached");
    const redirecting = createServer((_req, res) => res.writeHead(302, { location: "http://169.254.169.254/" }).end());
    await new Promise<void>((r) => redirecting.listen(0, "127.0.0.1", () => r()));
    const port = (redirecting.address() as { port: number }).port;
    await expect(local(`http://127.0.0.1:${port}/`)).rejects.toThrow(/redirects are not followed/);
    redirecting.close();
    const huge = createServer((_req, res) => res.end("x".repeat(2 << 20)));
    await new Promise<void>((r) => huge.listen(0, "127.0.0.1", () => r()));
    const small = outboundFetch({ allowLoopback: true }, { maxBytes: 1 << 20, deadlineMs: 5_000 });
    expect((await small(`http://127.0.0.1:${(huge.address() as { port: number }).port}/`)).status).toBe(502);
    huge.close();
    // Private ranges stay refused with loopback allowed.
    await expect(local("http://10.0.0.7/")).rejects.toBeInstanceOf(UrlNotAllowedError);
  });
});
