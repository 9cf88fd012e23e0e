import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UrlNotAllowedError } from "@harness-s/adapters";
import { checkOutboundUrl, forbiddenRange, guardedLookup, outboundFetch } from "@harness-s/adapters/net";

// Issue 31, item 2: a URL a caller names is refused when it points at this host or its network,
// in any spelling, at registration and at every connection; nothing reaches a listener there.
const listeners: { server: Server; hits: number; port: number }[] = [];
const listen = (host: string) =>
  new Promise<(typeof listeners)[number]>((resolve) => {
    const entry = {
      server: createServer((req, res) => res.end(req.url === "/redirect" ? "" : "reached")),
      hits: 0,
      port: 0,
    };
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
    const rebinding = {
      allowLoopback: false,
      resolve: async () => (lookups++ < 2 ? ["93.184.216.34"] : ["127.0.0.1"]),
    };
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

// Issue 52, items 10-11: the IPv6 special-purpose registry as a class (every block, and every
// form that embeds an IPv4 address judged by that address), and loopback meaning exactly
// 127.0.0.0/8 and ::1. Non-loopback addresses are checked on the classifier, the URL check and
// the lookup hook only: nothing here connects to them (a lookup that answers one answers
// 127.0.0.1 first, so a guard that let it through would reach the loopback listener instead).
const PRIVATE_V6 = [
  "64:ff9b:1::7f00:1", // local-use NAT64 (item 10)
  "::ffff:0:7f00:1", // SIIT of 127.0.0.1 (item 10)
  "64:ff9b:1:ffff::808:808", // local-use NAT64, whatever it embeds
  "::ffff:0:808:808", // SIIT, whatever it embeds
  "::ffff:0:10.0.0.1",
  "::8.8.8.8", // IPv4-compatible, deprecated
  "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo (its client is 127.0.0.1)
  "2001:10::1", // ORCHID
  "2001:20::1", // ORCHIDv2
  "2001:2::1", // benchmarking, in 2001::/23
  "3fff::1", // documentation (RFC 9637)
  "100:0:0:1::1", // dummy prefix
  "5f00::1", // SRv6 SIDs
  "2606:4700::5efe:10.0.0.1", // an ISATAP interface id carrying a private IPv4
  "2606:4700::200:5efe:192.168.0.1",
  "fe80::5efe:127.0.0.1",
];
const LOOPBACK_EMBEDDED = [
  "64:ff9b::7f00:1", // NAT64 of 127.0.0.1 (item 11)
  "2002:7f00:1::", // 6to4 of 127.0.0.1 (item 11)
  "::127.0.0.1", // IPv4-compatible 127.0.0.1 (item 11)
  "::ffff:127.0.0.1", // IPv4-mapped: the OS would connect it to 127.0.0.1, but only ::1 is IPv6 loopback here
  "2002:7fff:ffff::1",
  "64:ff9b::127.255.255.254",
  "::ffff:0:127.0.0.1",
];
const PUBLIC_EMBEDDED = ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2606:4700::200:5efe:8.8.8.8"];
const lookupOnce = (lookup: ReturnType<typeof guardedLookup>, host: string) =>
  new Promise<Error | null>((resolve) => lookup(host, { all: true }, (err) => resolve(err)));

describe("the IPv6 special-purpose registry and loopback exactly (issue 52, items 10-11)", () => {
  const allowed = (addresses: string[], allowLoopback: boolean) =>
    addresses.filter((a) => forbiddenRange(a, { allowLoopback }) === undefined);

  it("classifies every block and every embedded-IPv4 form by the address it carries, loopback allowed or not", () => {
    for (const allowLoopback of [false, true]) {
      expect(allowed([...PRIVATE_V6, ...LOOPBACK_EMBEDDED], allowLoopback), `allowLoopback ${allowLoopback}`).toEqual(
        [],
      );
      expect(allowed(PUBLIC_EMBEDDED, allowLoopback)).toEqual(PUBLIC_EMBEDDED);
    }
    expect(forbiddenRange("64:ff9b::7f00:1", { allowLoopback: true })).toBe("NAT64 form of 127.0.0.1 (loopback)");
    expect(forbiddenRange("::ffff:0:7f00:1")).toBe("IPv4-translated (SIIT) form of 127.0.0.1 (loopback)");
    expect(forbiddenRange("64:ff9b:1::7f00:1")).toBe("local-use NAT64 form of 127.0.0.1 (loopback)");
    // Loopback is 127.0.0.0/8 and ::1, in those spellings only.
    const loopback = ["127.0.0.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1"];
    expect(allowed(loopback, true)).toEqual(loopback);
    // The IPv4 registry: each block refused, loopback allowed or not; a neighbour of each is public.
    const v4Blocks = [
      "0.1.2.3",
      "10.9.9.9",
      "100.127.0.1",
      "169.254.169.254",
      "172.31.0.1",
      "192.0.0.170",
      "192.0.2.1",
      "192.88.99.1",
      "192.168.9.9",
    ];
    v4Blocks.push("198.19.0.1", "198.51.100.7", "203.0.113.9", "239.1.1.1", "250.0.0.1", "255.255.255.255");
    expect(allowed(v4Blocks, true)).toEqual([]);
    const neighbours = ["100.128.0.1", "172.32.0.1", "192.0.3.1", "198.20.0.1", "223.255.255.255", "11.0.0.1"];
    expect(allowed(neighbours, false)).toEqual(neighbours);
  });

  it("refuses them as URLs in every spelling the parser takes (bracketed, compressed or not, dotted, uppercase, leading zeros), loopback allowed or not", async () => {
    const spellings = [
      "http://[64:ff9b:1::7f00:1]/",
      "http://[0064:FF9B:0001:0000:0000:0000:7F00:0001]/",
      "http://[64:ff9b:1::127.0.0.1]/",
      "http://[::ffff:0:7f00:1]/",
      "http://[0:0:0:0:ffff:0:127.0.0.1]/",
      "http://[::FFFF:0:7F00:0001]:8080/v1",
      "http://[64:ff9b::7f00:1]/",
      "http://[64:FF9B::127.0.0.1]/",
      "http://[0064:ff9b:0000::7f00:0001]/",
      "http://[2002:7f00:1::]/",
      "http://[2002:7F00:0001:0:0:0:0:0]/",
      "http://[::127.0.0.1]/",
      "http://[0:0:0:0:0:0:127.0.0.1]/",
      "http://[::7f00:1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
      "http://[3fff::1]/",
    ];
    const passed = async (allowLoopback: boolean) =>
      (
        await Promise.all(
          spellings.map(async (url) =>
            (await checkOutboundUrl(url, { allowLoopback }).catch((e: Error) => e)) instanceof URL ? url : null,
          ),
        )
      ).filter(Boolean);
    expect(await passed(false)).toEqual([]);
    expect(await passed(true)).toEqual([]);
    await expect(checkOutboundUrl("http://[::1]/", { allowLoopback: true })).resolves.toBeInstanceOf(URL);
  });

  it("refuses them at the connect-time lookup (a DNS answer that names one among loopback), loopback allowed; no listener is reached", async () => {
    const hits = v4.hits;
    const letThrough: string[] = [];
    for (const address of [...PRIVATE_V6, ...LOOPBACK_EMBEDDED]) {
      const lookup = guardedLookup({ allowLoopback: true, resolve: async () => ["127.0.0.1", address] });
      if ((await lookupOnce(lookup, "policy.example.test")) === null) letThrough.push(address);
    }
    expect(letThrough).toEqual([]);
    expect(
      await lookupOnce(
        guardedLookup({ allowLoopback: true, resolve: async () => ["127.0.0.1", "::1"] }),
        "policy.example.test",
      ),
    ).toBeNull();
    // Through fetch: the name answers loopback when the URL is checked, then loopback and an
    // embedded form of it when the socket connects. Refused there; the listener gets nothing.
    const reasons: string[] = [];
    for (const address of ["64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1", "64:ff9b:1::7f00:1", "::ffff:0:7f00:1"]) {
      let lookups = 0;
      const policy = {
        allowLoopback: true,
        resolve: async () => (lookups++ === 0 ? ["127.0.0.1"] : ["127.0.0.1", address]),
      };
      const err = await outboundFetch(policy)(`http://policy.example.test:${v4.port}/`).then(
        () => new Error("reached"),
        (e: Error) => e,
      );
      reasons.push(
        String((err as Error & { cause?: unknown }).cause ?? err).includes(`resolves to ${address}`)
          ? address
          : `${address}: ${err.message}`,
      );
    }
    expect(reasons).toEqual([
      "64:ff9b::7f00:1",
      "2002:7f00:1::",
      "::127.0.0.1",
      "64:ff9b:1::7f00:1",
      "::ffff:0:7f00:1",
    ]);
    expect(v4.hits).toBe(hits);
  });
});

// Issue 55, item 6: an operator's allowlist of CIDRs opens private blocks (a cluster's network);
// instance metadata, loopback, unspecified, multicast and broadcast addresses are never opened,
// in any form, whatever it holds. Non-loopback addresses are checked on the classifier, the URL
// check and the lookup hook only (a lookup answers 127.0.0.1 first): nothing connects to them.
describe("the operator's endpoint allowlist (issue 55, item 6)", () => {
  const METADATA = [
    "169.254.169.254",
    "fd00:ec2::254",
    "169.254.170.2",
    "169.254.170.23",
    "fd00:ec2::23",
    "100.100.100.200",
    "192.0.0.192",
    "169.254.0.23",
  ];
  const METADATA_FORMS = [
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "2002:a9fe:a9fe::1",
    "2606:4700::5efe:169.254.169.254",
    "::ffff:100.100.100.200",
  ];
  const EVERYTHING = ["0.0.0.0/0", "::/0"];
  const open = (addresses: string[], allowCidrs: string[], allowLoopback = false) =>
    addresses.filter((a) => forbiddenRange(a, { allowLoopback, allowCidrs }) === undefined);

  it("opens the blocks it holds and only those; an IPv6 form carrying an IPv4 address when that address is open", () => {
    expect(open(["10.1.2.3", "10.255.255.255"], ["10.0.0.0/8"])).toEqual(["10.1.2.3", "10.255.255.255"]);
    expect(open(["172.16.0.1", "192.168.1.1", "100.64.0.1", "fd12::1", "11.0.0.1"], ["10.0.0.0/8"])).toEqual([
      "11.0.0.1",
    ]);
    expect(open(["fd12:3456::1", "fd00:1::1", "fe80::1"], ["fd12::/16"])).toEqual(["fd12:3456::1"]);
    expect(open(["::ffff:10.1.2.3", "64:ff9b::a01:203", "::ffff:192.168.0.1"], ["10.0.0.0/8"])).toEqual([
      "::ffff:10.1.2.3",
      "64:ff9b::a01:203",
    ]);
    expect(forbiddenRange("192.168.0.1", { allowCidrs: ["10.0.0.0/8"] })).toBe("private");
  });

  it("never opens instance metadata, in any form, under 169.254.0.0/16, fd00::/8 or everything", () => {
    for (const allowCidrs of [
      ["169.254.0.0/16", "fd00::/8", "100.64.0.0/10", "192.0.0.0/24"],
      EVERYTHING,
      [...EVERYTHING, "169.254.169.254/32", "fd00:ec2::254/128"],
    ]) {
      expect(open([...METADATA, ...METADATA_FORMS], allowCidrs, true), allowCidrs.join()).toEqual([]);
      // The cloud's other host services beside them never are (issue 67 item 11); a link-local or ULA address elsewhere
      // is.
      expect(open(["169.254.169.253", "169.254.1.1", "fd00:ec2::255", "fd12::1"], allowCidrs)).toEqual(
        allowCidrs.includes("fd00::/8") || allowCidrs.includes("::/0") ? ["169.254.1.1", "fd12::1"] : ["169.254.1.1"],
      );
    }
    expect(forbiddenRange("169.254.169.254", { allowCidrs: EVERYTHING })).toBe("instance metadata: never allowed");
    expect(forbiddenRange("::ffff:169.254.169.254", { allowCidrs: EVERYTHING })).toBe(
      "IPv4-mapped form of 169.254.169.254 (instance metadata: never allowed)",
    );
  });

  it("never opens loopback (its own switch), unspecified, multicast or broadcast; the allowlist changes nothing for the rest", () => {
    const never = [
      "127.0.0.1",
      "::1",
      "::ffff:127.0.0.1",
      "64:ff9b::7f00:1",
      "0.0.0.0",
      "0.1.2.3",
      "::",
      "224.0.0.1",
      "ff02::1",
      "255.255.255.255",
    ];
    expect(open(never, EVERYTHING)).toEqual([]);
    expect(open(never, EVERYTHING, true)).toEqual(["127.0.0.1", "::1"]);
    expect(forbiddenRange("127.0.0.1", { allowCidrs: ["127.0.0.0/8"] })).toBe("loopback");
    expect([
      forbiddenRange("93.184.216.34", { allowCidrs: ["10.0.0.0/8"] }),
      forbiddenRange("2606:4700::1111", { allowCidrs: [] }),
    ]).toEqual([undefined, undefined]);
  });

  it("checks URLs and every connection with it: a name answering 10.x passes under 10.0.0.0/8, one answering metadata never; no listener is reached", async () => {
    const hits = v4.hits;
    const policy = (answer: string[], allowCidrs: string[]) => ({
      allowLoopback: true,
      allowCidrs,
      resolve: async () => answer,
    });
    await expect(
      checkOutboundUrl("http://cluster.test:8000/v1", policy(["10.1.2.3"], ["10.0.0.0/8"])),
    ).resolves.toBeInstanceOf(URL);
    await expect(
      checkOutboundUrl("http://10.1.2.3:8000/v1", { allowLoopback: false, allowCidrs: ["10.0.0.0/8"] }),
    ).resolves.toBeInstanceOf(URL);
    await expect(checkOutboundUrl("http://10.1.2.3:8000/v1", { allowLoopback: false })).rejects.toThrow(
      /10\.1\.2\.3 \(private\)/,
    );
    await expect(
      checkOutboundUrl("http://[fd00:ec2::254]/", { allowLoopback: false, allowCidrs: ["::/0"] }),
    ).rejects.toThrow(/instance metadata: never allowed/);
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://[::ffff:a9fe:a9fe]/",
      "http://0xa9fea9fe/",
      "http://100.100.100.200/",
    ]) {
      await expect(
        checkOutboundUrl(url, { allowLoopback: true, allowCidrs: [...EVERYTHING, "169.254.0.0/16"] }),
        url,
      ).rejects.toBeInstanceOf(UrlNotAllowedError);
    }
    expect(
      await lookupOnce(guardedLookup(policy(["127.0.0.1", "10.1.2.3"], ["10.0.0.0/8"])), "cluster.test"),
    ).toBeNull();
    expect(await lookupOnce(guardedLookup(policy(["127.0.0.1", "10.1.2.3"], [])), "cluster.test")).toBeInstanceOf(
      UrlNotAllowedError,
    );
    expect(
      await lookupOnce(guardedLookup(policy(["127.0.0.1", "169.254.169.254"], EVERYTHING)), "cluster.test"),
    ).toBeInstanceOf(UrlNotAllowedError);
    // Through fetch: a name answering loopback and 10.x reaches the loopback listener only when 10.0.0.0/8 is allowed.
    const reached = await outboundFetch(policy(["127.0.0.1", "10.1.2.3"], ["10.0.0.0/8"]))(
      `http://cluster.test:${v4.port}/`,
    );
    expect(await reached.text()).toBe("reached");
    const metadata = await outboundFetch(policy(["127.0.0.1", "169.254.169.254"], ["169.254.0.0/16"]))(
      `http://cluster.test:${v4.port}/`,
    ).catch((e: Error) => e);
    expect(String((metadata as Error & { cause?: unknown }).cause ?? metadata)).toMatch(
      /169\.254\.169\.254 \(instance metadata: never allowed\)/,
    );
    expect(v4.hits).toBe(hits + 1);
  });
});
