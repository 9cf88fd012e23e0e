import { isIP } from "node:net";

/**
 * The IANA special-purpose address registries (IPv4 and IPv6), as ranges an endpoint a caller
 * names may not resolve to: this host and its network (loopback, private, CGNAT, link-local with
 * the instance metadata address, ULA, site-local), addresses that are no host (unspecified,
 * multicast, broadcast, discard, documentation, benchmarking, reserved), and the transition and
 * protocol blocks that are not globally reachable. Each entry is [network, prefix length, why].
 */
const IPV4: readonly [string, number, string][] = [
  ["0.0.0.0", 8, "this network (unspecified)"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "CGNAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local (the instance metadata address among them)"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay anycast (deprecated)"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"],
];
const IPV6: readonly [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::", 96, "IPv4-compatible (deprecated)"],
  ["::ffff:0:0:0", 96, "IPv4-translated (SIIT)"],
  ["64:ff9b:1::", 48, "local-use NAT64"],
  ["100::", 64, "discard-only"],
  ["100:0:0:1::", 64, "dummy prefix"],
  ["2001::", 32, "Teredo"],
  ["2001:10::", 28, "ORCHID (deprecated)"],
  ["2001:20::", 28, "ORCHIDv2"],
  ["2001::", 23, "IETF protocol assignments"],
  ["2001:db8::", 32, "documentation"],
  ["3fff::", 20, "documentation"],
  ["5f00::", 16, "segment routing (SRv6) SIDs"],
  ["fc00::", 7, "unique local (ULA)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local (deprecated)"],
  ["ff00::", 8, "multicast"],
];

/**
 * The IPv6 forms that carry an IPv4 address, and where: an address of any of them is refused when
 * the IPv4 it carries is in a range above (loopback included: the only IPv6 loopback is ::1).
 * Mapped, NAT64 and 6to4 reach that IPv4 address; the others are refused whole anyway, or (ISATAP)
 * tunnel to it from a prefix of their own.
 */
const EMBEDDINGS: readonly { form: string; matches: (b: Uint8Array) => boolean; ipv4: (b: Uint8Array) => Uint8Array }[] = [
  { form: "IPv4-mapped", matches: (b) => inRange(b, parse("::ffff:0:0")!, 96), ipv4: (b) => b.subarray(12) },
  { form: "IPv4-translated (SIIT)", matches: (b) => inRange(b, parse("::ffff:0:0:0")!, 96), ipv4: (b) => b.subarray(12) },
  { form: "IPv4-compatible", matches: (b) => inRange(b, parse("::")!, 96) && !inRange(b, parse("::")!, 127), ipv4: (b) => b.subarray(12) },
  { form: "NAT64", matches: (b) => inRange(b, parse("64:ff9b::")!, 96), ipv4: (b) => b.subarray(12) },
  { form: "6to4", matches: (b) => inRange(b, parse("2002::")!, 16), ipv4: (b) => b.subarray(2, 6) },
  { form: "Teredo (client)", matches: (b) => inRange(b, parse("2001::")!, 32), ipv4: (b) => b.subarray(12).map((x) => x ^ 0xff) },
  // An ISATAP interface id (::0:5efe:a.b.c.d or ::200:5efe:a.b.c.d) under any prefix.
  { form: "ISATAP", matches: (b) => (b[8]! & 0xfd) === 0 && b[9] === 0 && b[10] === 0x5e && b[11] === 0xfe, ipv4: (b) => b.subarray(12) },
];

/** The bytes of an IP address (4 for IPv4, 16 for IPv6, a zone id dropped), or undefined for anything else. */
function parse(address: string): Uint8Array | undefined {
  const text = address.split("%")[0]!;
  const family = isIP(text);
  if (family === 4) return Uint8Array.from(text.split(".").map(Number));
  if (family !== 6) return undefined;
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  const v4 = dotted && parse(dotted[2]!)!;
  const hex = dotted && v4 ? `${dotted[1]}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}` : text;
  const [head, tail] = hex.includes("::") ? hex.split("::") : [hex, undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = [...h, ...Array<string>(tail === undefined ? 0 : 8 - h.length - t.length).fill("0"), ...t].map((g) => Number.parseInt(g, 16));
  return Uint8Array.from(groups.flatMap((g) => [g >> 8, g & 255]));
}

function inRange(address: Uint8Array, network: Uint8Array, bits: number): boolean {
  if (address.length !== network.length) return false;
  for (let bit = 0; bit < bits; bit += 8) {
    const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff;
    if ((address[bit >> 3]! & mask) !== (network[bit >> 3]! & mask)) return false;
  }
  return true;
}

const compiled = (table: readonly [string, number, string][]) => table.map(([net, bits, why]) => ({ net: parse(net)!, bits, why }));
const RANGES = [...compiled(IPV4), ...compiled(IPV6)];
const LOOPBACK = { v4: parse("127.0.0.0")!, v6: parse("::1")! };

const rangeOf = (b: Uint8Array) => RANGES.find((r) => inRange(b, r.net, r.bits))?.why;

/** Whether `address` is loopback as the OS connects it: 127.0.0.0/8 or exactly ::1 (no other spelling). */
export function isLoopback(address: string): boolean {
  const b = parse(address);
  return b !== undefined && (inRange(b, LOOPBACK.v4, 8) || inRange(b, LOOPBACK.v6, 128));
}

/**
 * Why a resolved address may not be connected to (its range, or the IPv4 address it embeds and
 * that address's range), or undefined when it may. `allowLoopback` lets exactly 127.0.0.0/8 and
 * ::1 through (a laptop, the tests): an IPv6 form that embeds 127.x.y.z stays refused.
 *
 * @example
 * forbiddenRange("169.254.169.254"); // "link-local (the instance metadata address among them)"
 * forbiddenRange("64:ff9b::7f00:1", { allowLoopback: true }); // "NAT64 form of 127.0.0.1 (loopback)"
 */
export function forbiddenRange(address: string, opts: { allowLoopback?: boolean } = {}): string | undefined {
  const b = parse(address);
  if (!b) return "not an IP address";
  if (isLoopback(address)) return opts.allowLoopback ? undefined : "loopback";
  if (b.length === 16) {
    for (const { form, matches, ipv4 } of EMBEDDINGS) {
      if (!matches(b)) continue;
      const v4 = ipv4(b);
      const why = rangeOf(v4);
      if (why) return `${form} form of ${v4.join(".")} (${why})`;
    }
  }
  return rangeOf(b);
}
