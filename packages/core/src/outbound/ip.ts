import { isIP } from "node:net";

/**
 * The bytes of an IP address (4 for IPv4, 16 for IPv6, a zone id dropped), or undefined for
 * anything else.
 *
 * @example
 * ipBytes("::ffff:10.0.0.1"); // Uint8Array [0, …, 0xff, 0xff, 10, 0, 0, 1]
 */
export function ipBytes(address: string): Uint8Array | undefined {
  const text = address.split("%")[0]!;
  const family = isIP(text);
  if (family === 4) return Uint8Array.from(text.split(".").map(Number));
  if (family !== 6) return undefined;
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  const v4 = dotted && ipBytes(dotted[2]!)!;
  const hex =
    dotted && v4
      ? `${dotted[1]}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`
      : text;
  const [head, tail] = hex.includes("::") ? hex.split("::") : [hex, undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = [...h, ...Array<string>(tail === undefined ? 0 : 8 - h.length - t.length).fill("0"), ...t].map((g) =>
    Number.parseInt(g, 16),
  );
  return Uint8Array.from(groups.flatMap((g) => [g >> 8, g & 255]));
}

/** Whether `address` lies in `network`/`bits` (both of one family; another family never does). */
export function inPrefix(address: Uint8Array, network: Uint8Array, bits: number): boolean {
  if (address.length !== network.length) return false;
  for (let bit = 0; bit < bits; bit += 8) {
    const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff;
    if ((address[bit >> 3]! & mask) !== (network[bit >> 3]! & mask)) return false;
  }
  return true;
}
