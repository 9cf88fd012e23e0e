import { BlockList, isIP } from "node:net";

/**
 * Address ranges an endpoint a caller names may not resolve to: this host and its network
 * (loopback, private, CGNAT, link-local with the instance metadata address, ULA), addresses
 * that are no host (unspecified, multicast, broadcast, reserved, documentation, benchmarking),
 * and the IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4), checked by that address.
 */
const IPV4: [string, number, string][] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "CGNAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local (the instance metadata address among them)"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved (and broadcast)"],
];
const IPV6: [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["100::", 64, "discard"],
  ["2001:db8::", 32, "documentation"],
  ["fc00::", 7, "unique local (ULA)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

const lists = new Map<string, BlockList>();
for (const [net, prefix, why] of [...IPV4.map((r) => [...r, "ipv4"] as const), ...IPV6.map((r) => [...r, "ipv6"] as const)]) {
  const list = lists.get(why) ?? new BlockList();
  list.addSubnet(net, prefix, prefix === 128 || net.includes(":") ? "ipv6" : "ipv4");
  lists.set(why, list);
}

/** The IPv4 address an IPv6 one embeds, for the forms that route to it: mapped, NAT64, 6to4. */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!); // ::ffff:a.b.c.d
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return v4(groups[6]!, groups[7]!); // 64:ff9b::a.b.c.d
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!); // 2002:AABB:CCDD::
  if (groups.slice(0, 6).every((g) => g === 0) && (groups[6] !== 0 || groups[7]! > 1)) return v4(groups[6]!, groups[7]!); // ::a.b.c.d (deprecated compatible)
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (with an embedded dotted IPv4 tail), or undefined. */
function expandIpv6(address: string): number[] | undefined {
  let text = address.split("%")[0]!.toLowerCase();
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const [a, b, c, d] = dotted[2]!.split(".").map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const groups = [...h, ...Array(Math.max(fill, 0)).fill("0"), ...t].map((g) => Number.parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * Why a resolved address may not be connected to (its range), or undefined when it may.
 * `allowLoopback` lets 127.0.0.0/8 and ::1 through (a laptop, the tests), nothing else.
 *
 * @example
 * forbiddenRange("169.254.169.254"); // "link-local (the instance metadata address among them)"
 */
export function forbiddenRange(address: string, opts: { allowLoopback?: boolean } = {}): string | undefined {
  const family = isIP(address);
  if (family === 0) return "not an IP address";
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4) return forbiddenRange(v4, opts);
  }
  for (const [why, list] of lists) {
    if (opts.allowLoopback && why === "loopback") continue;
    if (list.check(address, family === 6 ? "ipv6" : "ipv4")) return why;
  }
  return undefined;
}
