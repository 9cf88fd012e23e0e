import { z } from "zod";
import { inPrefix, ipBytes } from "./ip.ts";

/** The most CIDRs an operator's endpoint allowlist may hold. */
export const MAX_ENDPOINT_CIDRS = 64;

/** An address block as bytes: what the outbound guard compares a resolved address with. */
export interface AddressBlock {
  network: Uint8Array;
  bits: number;
}

/** The canonical text of an address's bytes: dotted IPv4, or IPv6 as the WHATWG parser compresses it. */
const addressText = (b: Uint8Array): string =>
  b.length === 4
    ? b.join(".")
    : new URL(
        `http://[${Array.from({ length: 8 }, (_, i) => ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16)).join(":")}]/`,
      ).hostname.slice(1, -1);

/** Why `text` is not a CIDR, or its block and canonical spelling. */
function readCidr(text: string): { problem: string } | { block: AddressBlock; canonical: string } {
  const match = text.match(/^([^/]+)\/(\d{1,3})$/);
  if (!match) return { problem: "not a CIDR: an address, a slash and a prefix length (10.0.0.0/8, fd00:1::/64)" };
  const network = match[1]!.includes("%") ? undefined : ipBytes(match[1]!);
  if (!network) return { problem: `${JSON.stringify(match[1])} is not an IPv4 or IPv6 address` };
  const bits = Number(match[2]);
  const most = network.length * 8;
  if (bits > most) return { problem: `an IPv${network.length === 4 ? 4 : 6} prefix is at most /${most}, not /${bits}` };
  const masked = network.map((byte, i) =>
    i * 8 >= bits ? 0 : i * 8 + 8 <= bits ? byte : byte & ((0xff << (8 - (bits - i * 8))) & 0xff),
  );
  const canonical = `${addressText(masked)}/${bits}`;
  if (!inPrefix(network, masked, most)) return { problem: `bits are set past the /${bits} prefix: write ${canonical}` };
  return { block: { network: masked, bits }, canonical };
}

/**
 * One CIDR of the operator's endpoint allowlist (IPv4 or IPv6, the network address written with
 * no bits past its prefix), in canonical form: dotted IPv4, compressed lowercase IPv6.
 *
 * @example
 * EndpointCidr.parse("FD00:0:0::/8"); // "fd00::/8"
 * EndpointCidr.parse("10.1.0.0/8"); // ZodError: bits are set past the /8 prefix: write 10.0.0.0/8
 */
export const EndpointCidr = z
  .string()
  .max(64)
  .transform((raw, ctx) => {
    const got = readCidr(raw.trim());
    if ("canonical" in got) return got.canonical;
    ctx.addIssue({ code: "custom", message: `${JSON.stringify(raw)}: ${got.problem}` });
    return z.NEVER;
  });
export type EndpointCidr = z.infer<typeof EndpointCidr>;

/**
 * The address blocks an operator opens to callers' endpoints and environments (a cluster's
 * private network): each still passes the outbound guard's never-opened addresses (instance
 * metadata, loopback, unspecified, multicast, broadcast).
 */
export const EndpointCidrs = z.array(EndpointCidr).max(MAX_ENDPOINT_CIDRS, `at most ${MAX_ENDPOINT_CIDRS} CIDRs`);
export type EndpointCidrs = z.infer<typeof EndpointCidrs>;

/** The block of a CIDR `EndpointCidr` accepted. */
export function cidrBlock(cidr: EndpointCidr): AddressBlock {
  const got = readCidr(cidr);
  if (!("block" in got)) throw new Error(`not a CIDR: ${cidr} (${got.problem})`);
  return got.block;
}
