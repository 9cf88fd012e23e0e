import {
  type AddressBlock,
  type EndpointCidr,
  cidrBlock,
  ipBytes as parse,
  inPrefix as inRange,
} from "@harness-s/core/outbound";

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
 * Where RFC 6052 puts the IPv4 address in an IPv4-embedded IPv6 address, by the translator's
 * prefix length: its bytes, skipping byte 8 (bits 64 to 71, the "u" octet that is always zero).
 */
const RFC6052_LAYOUTS: Readonly<Record<number, readonly number[]>> = {
  32: [4, 5, 6, 7],
  40: [5, 6, 7, 9],
  48: [6, 7, 9, 10],
  56: [7, 9, 10, 11],
  64: [9, 10, 11, 12],
  96: [12, 13, 14, 15],
};
const at = (b: Uint8Array, bytes: readonly number[]) => Uint8Array.from(bytes.map((i) => b[i]!));

/**
 * The IPv4 addresses `b` may carry under each of RFC 6052's layouts in `lengths`: a layout shorter
 * than /96 counts only where its "u" octet and the suffix after the IPv4 bytes are zero, as the
 * RFC writes them (so a /96 address is not read again as a /48 one), and a reading in 0.0.0.0/8
 * (the zeros another layout leaves) only when no layout reads anything else: that one is refused.
 */
function carried(b: Uint8Array, lengths: readonly number[]): Uint8Array[] {
  const readings = lengths
    .filter((len) => len === 96 || (b[8] === 0 && b.subarray(RFC6052_LAYOUTS[len]!.at(-1)! + 1).every((x) => x === 0)))
    .map((len) => at(b, RFC6052_LAYOUTS[len]!));
  const hosts = readings.filter((v4) => v4[0] !== 0);
  return hosts.length ? hosts : readings;
}

/**
 * The IPv6 forms that carry an IPv4 address, and where: an address of any of them is refused when
 * any IPv4 it may carry is in a range above (loopback included: the only IPv6 loopback is ::1),
 * whatever the operator's allowlist opens. Mapped, NAT64 and 6to4 reach that IPv4 address; the
 * others are refused whole anyway, or (ISATAP) tunnel to it from a prefix of their own. A
 * local-use NAT64 prefix (64:ff9b:1::/48, RFC 8215) may be cut at any length RFC 6052 allows
 * inside it (/48 to /96), so each place it could carry an IPv4 address is read.
 */
const EMBEDDINGS: readonly {
  form: string;
  matches: (b: Uint8Array) => boolean;
  ipv4: (b: Uint8Array) => Uint8Array[];
}[] = [
  { form: "IPv4-mapped", matches: (b) => inRange(b, parse("::ffff:0:0")!, 96), ipv4: (b) => [b.subarray(12)] },
  {
    form: "IPv4-translated (SIIT)",
    matches: (b) => inRange(b, parse("::ffff:0:0:0")!, 96),
    ipv4: (b) => [b.subarray(12)],
  },
  {
    form: "IPv4-compatible",
    matches: (b) => inRange(b, parse("::")!, 96) && !inRange(b, parse("::")!, 127),
    ipv4: (b) => [b.subarray(12)],
  },
  { form: "NAT64", matches: (b) => inRange(b, parse("64:ff9b::")!, 96), ipv4: (b) => [b.subarray(12)] },
  {
    form: "local-use NAT64",
    matches: (b) => inRange(b, parse("64:ff9b:1::")!, 48),
    ipv4: (b) => carried(b, [48, 56, 64, 96]),
  },
  { form: "6to4", matches: (b) => inRange(b, parse("2002::")!, 16), ipv4: (b) => [b.subarray(2, 6)] },
  {
    form: "Teredo (client)",
    matches: (b) => inRange(b, parse("2001::")!, 32),
    ipv4: (b) => [b.subarray(12).map((x) => x ^ 0xff)],
  },
  // An ISATAP interface id (::0:5efe:a.b.c.d or ::200:5efe:a.b.c.d) under any prefix.
  {
    form: "ISATAP",
    matches: (b) => (b[8]! & 0xfd) === 0 && b[9] === 0 && b[10] === 0x5e && b[11] === 0xfe,
    ipv4: (b) => [b.subarray(12)],
  },
];

const compiled = (table: readonly [string, number, string][]) =>
  table.map(([net, bits, why]) => ({ net: parse(net)!, bits, why }));
const RANGES = [...compiled(IPV4), ...compiled(IPV6)];
const LOOPBACK = { v4: parse("127.0.0.0")!, v6: parse("::1")! };

/**
 * Addresses no endpoint allowlist opens: every cloud's host services — instance metadata and the
 * services beside it (169.254.169.0/24: the metadata address GCP, Azure, Oracle, OpenStack,
 * DigitalOcean and Hetzner share with AWS, and AWS's DNS, time and licensing; AWS's IPv6 host
 * services fd00:ec2::/32; the ECS and EKS credential endpoints in 169.254.170.0/24; Azure's host
 * (WireServer) 168.63.129.16; Alibaba's, Oracle's legacy and Tencent's metadata), loopback (its own
 * switch: `allowLoopback`), and what is no host (unspecified, multicast, broadcast). An IPv6 form
 * that carries one of these IPv4 addresses is never opened either.
 */
const NEVER_OPENED = compiled([
  ["169.254.169.254", 32, "instance metadata"],
  ["fd00:ec2::254", 128, "instance metadata"],
  ["169.254.169.0", 24, "cloud host services (metadata, DNS, time, licensing)"],
  ["fd00:ec2::", 32, "cloud host services (AWS, IPv6)"],
  ["169.254.170.0", 24, "container credential services (ECS, EKS Pod Identity)"],
  ["168.63.129.16", 32, "cloud host (Azure WireServer)"],
  ["100.100.100.200", 32, "instance metadata (Alibaba Cloud)"],
  ["192.0.0.192", 32, "instance metadata (Oracle Cloud, legacy)"],
  ["169.254.0.23", 32, "instance metadata (Tencent Cloud)"],
  ["127.0.0.0", 8, "loopback"],
  ["::1", 128, "loopback"],
  ["0.0.0.0", 8, "this network (unspecified)"],
  ["::", 128, "unspecified"],
  ["224.0.0.0", 4, "multicast"],
  ["ff00::", 8, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
]);

const rangeOf = (b: Uint8Array) => RANGES.find((r) => inRange(b, r.net, r.bits))?.why;

/**
 * What an address's bytes are refused as (its never-opened class, else its range unless an allowed block holds it), or
 * undefined.
 */
function refusal(b: Uint8Array, allowed: readonly AddressBlock[]): string | undefined {
  const never = NEVER_OPENED.find((r) => inRange(b, r.net, r.bits))?.why;
  if (never) return never === "loopback" || !allowed.length ? (rangeOf(b) ?? never) : `${never}: never allowed`;
  const why = rangeOf(b);
  return why && !allowed.some((a) => inRange(b, a.network, a.bits)) ? why : undefined;
}

/** Whether `address` is loopback as the OS connects it: 127.0.0.0/8 or exactly ::1 (no other spelling). */
export function isLoopback(address: string): boolean {
  const b = parse(address);
  return b !== undefined && (inRange(b, LOOPBACK.v4, 8) || inRange(b, LOOPBACK.v6, 128));
}

/** Which addresses `forbiddenRange` lets through beyond public ones. */
export interface RangeAllowance {
  /** Exactly 127.0.0.0/8 and ::1 (a laptop, the tests): an IPv6 form that embeds 127.x.y.z stays refused. */
  allowLoopback?: boolean;
  /** The operator's allowlist (`EndpointCidrs`): blocks opened, bar the never-opened addresses. */
  allowCidrs?: readonly EndpointCidr[];
}

/**
 * Why a resolved address may not be connected to (its range, or the IPv4 address it embeds and
 * that address's range), or undefined when it may. `allowCidrs` opens the addresses in them (an
 * IPv6 form that carries an IPv4 address, when both are open), never an instance metadata,
 * loopback, unspecified, multicast or broadcast address in any form.
 *
 * @example
 * forbiddenRange("169.254.169.254"); // "link-local (the instance metadata address among them)"
 * forbiddenRange("169.254.169.254", { allowCidrs: ["0.0.0.0/0"] }); // "instance metadata: never allowed"
 * forbiddenRange("10.1.2.3", { allowCidrs: ["10.0.0.0/8"] }); // undefined
 * forbiddenRange("64:ff9b::7f00:1", { allowLoopback: true }); // "NAT64 form of 127.0.0.1 (loopback)"
 */
export function forbiddenRange(address: string, opts: RangeAllowance = {}): string | undefined {
  const b = parse(address);
  if (!b) return "not an IP address";
  if (isLoopback(address)) return opts.allowLoopback ? undefined : "loopback";
  const allowed = (opts.allowCidrs ?? []).map(cidrBlock);
  if (b.length === 16) {
    for (const { form, matches, ipv4 } of EMBEDDINGS) {
      if (!matches(b)) continue;
      for (const v4 of ipv4(b)) {
        const why = refusal(v4, allowed);
        if (why) return `${form} form of ${v4.join(".")} (${why})`;
      }
    }
  }
  return refusal(b, allowed);
}
