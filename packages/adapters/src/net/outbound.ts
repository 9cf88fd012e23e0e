import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, fetch as undiciFetch } from "undici";
import { canonicalCallerUrl, type EndpointCidr } from "@harness-s/core/outbound";
import { UrlNotAllowedError } from "../errors.ts";
import { boundedFetch } from "../llm/bounded-fetch.ts";
import { forbiddenRange } from "./address-ranges.ts";

/** What outbound connections to caller-named endpoints may reach. */
export interface OutboundPolicy {
  /** Let loopback through (`serve --allow-loopback-endpoints`: a laptop, the tests); only this switch opens it. */
  allowLoopback: boolean;
  /**
   * The operator's allowlist (`serve --allow-endpoint-cidr`, the deployment's `EndpointCidrs`
   * secret): private blocks callers' endpoints and environments may be in. Instance metadata,
   * loopback, unspecified, multicast and broadcast addresses stay refused whatever it holds.
   */
  allowCidrs?: readonly EndpointCidr[];
  /** How names resolve (default: the system resolver, every address); tests give their own. */
  resolve?: (hostname: string) => Promise<string[]>;
}

/** The most a caller's endpoint may send back, and how long it may take, per request. */
export const OUTBOUND_LIMITS = { maxBytes: 16 << 20, deadlineMs: 60_000 };

const systemResolve = (hostname: string): Promise<string[]> =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, found) =>
      err ? reject(err) : resolve((found as LookupAddress[]).map((a) => a.address)),
    ),
  );

/**
 * A URL a caller gave, checked before any connection: typed in printable ASCII (no whitespace,
 * control, backslash or Unicode a parser would silently change: `canonicalCallerUrl`), http or
 * https, no credentials in it, a host whose every address is outside the refused ranges
 * (`forbiddenRange`; the WHATWG parser has already turned decimal, octal, hex and short IPv4
 * forms into dotted ones and IPv6 into its compressed lowercase form, and a trailing dot resolves
 * as the name it ends). Returns the URL as parsed: its `href` is what to connect to.
 *
 * @example
 * await checkOutboundUrl("http://0x7f.1:8000/v1", { allowLoopback: false }); // UrlNotAllowedError: … loopback
 */
export async function checkOutboundUrl(raw: string, policy: OutboundPolicy): Promise<URL> {
  const canonical = canonicalCallerUrl(raw);
  if ("problem" in canonical) throw new UrlNotAllowedError(raw, canonical.problem);
  const url = new URL(canonical.href);
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UrlNotAllowedError(raw, `only http and https are allowed, not ${url.protocol}`);
  if (url.username || url.password)
    throw new UrlNotAllowedError(raw, "credentials in the URL are not allowed (register a secret header instead)");
  await allowedAddresses(url.hostname.replace(/^\[|\]$/g, ""), policy, raw);
  return url;
}

/** Every address `host` resolves to, each allowed; else the first refusal. */
async function allowedAddresses(host: string, policy: OutboundPolicy, shown: string): Promise<string[]> {
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await (policy.resolve ?? systemResolve)(host);
  } catch (err) {
    throw new UrlNotAllowedError(
      shown,
      `its host does not resolve (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    );
  }
  if (addresses.length === 0) throw new UrlNotAllowedError(shown, "its host resolves to no address");
  for (const address of addresses) {
    const why = forbiddenRange(address, policy);
    if (why) throw new UrlNotAllowedError(shown, `its host resolves to ${address} (${why})`);
  }
  return addresses;
}

/**
 * A `lookup` for sockets (undici's connector, `ws`, `http.request`) that resolves and checks at
 * the moment of connecting, and connects to the very address it checked: a name that resolved to
 * a public address when it was registered and to a private one now (DNS rebinding) is refused.
 */
export function guardedLookup(policy: OutboundPolicy) {
  return (
    hostname: string,
    options: { all?: boolean },
    callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    allowedAddresses(hostname.replace(/^\[|\]$/g, ""), policy, hostname).then(
      (addresses) => {
        const all = addresses.map((address) => ({ address, family: isIP(address) }));
        if (options?.all) callback(null, all);
        else callback(null, all[0]!.address, all[0]!.family);
      },
      (err: Error) => callback(err, ""),
    );
  };
}

/**
 * fetch for caller-named endpoints: the URL checked first, every connection checked again as it
 * is made (`guardedLookup`), redirects refused (a 3xx is answered as an error, never followed),
 * and the reply bounded in size and time (`boundedFetch`).
 *
 * @example
 * const res = await outboundFetch({ allowLoopback: false })("https://policy.example.com/v1/models");
 */
export function outboundFetch(policy: OutboundPolicy, limits = OUTBOUND_LIMITS): typeof fetch {
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(policy) as never } });
  const guarded = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const target = typeof input === "string" || input instanceof URL ? String(input) : input.url;
    const checked = await checkOutboundUrl(target, policy);
    const res = await undiciFetch(checked.href, { ...(init as object), redirect: "manual", dispatcher } as never);
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => undefined);
      throw new UrlNotAllowedError(target, `answered a redirect (${res.status}); redirects are not followed`);
    }
    return res as unknown as Response;
  }) as typeof fetch;
  return boundedFetch(limits, guarded);
}
