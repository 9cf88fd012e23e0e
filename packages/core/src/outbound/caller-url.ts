import { z } from "zod";

/** The most characters a URL a caller names may have. */
export const MAX_CALLER_URL_CHARS = 2_000;

/**
 * What a URL a caller names may not contain as typed, each a spelling a parser would silently
 * change (the WHATWG parser strips or drops whitespace and controls, reads `\` as `/`, maps
 * fullwidth and other Unicode in a host through IDNA) or that this service would misread.
 */
const REFUSED_SPELLINGS: readonly [RegExp, string][] = [
  [/[\0-\x20\x7f]/, "a space or control character (tab, newline, NUL, …)"],
  [
    /[^\0-\x7f]/,
    "a character outside ASCII (write an internationalised name in its xn-- form, anything else percent-encoded)",
  ],
  [/\\/, "a backslash (parsers disagree on it: write /)"],
];

/**
 * A URL a caller names, as the WHATWG parser's canonical `href` (the form the outbound guard
 * checks and the service stores and connects to), or why it is refused. Scheme, credentials and
 * addresses are the outbound guard's to judge.
 *
 * @example
 * canonicalCallerUrl("HTTP://Policy.Example.com:80/v1"); // { href: "http://policy.example.com/v1" }
 * canonicalCallerUrl(" http://127.0.0.1/"); // { problem: "a space or control character (tab, newline, NUL, …)" }
 */
export function canonicalCallerUrl(raw: string): { href: string } | { problem: string } {
  const refused = REFUSED_SPELLINGS.find(([pattern]) => pattern.test(raw));
  if (refused) return { problem: refused[1] };
  if (!URL.canParse(raw)) return { problem: "not a URL" };
  const { href } = new URL(raw);
  return href.length > MAX_CALLER_URL_CHARS ? { problem: `longer than ${MAX_CALLER_URL_CHARS} characters` } : { href };
}

/**
 * A base URL a caller names (endpoint, environment), parsed into its canonical form (see
 * {@link canonicalCallerUrl}); no query or fragment, as the service appends its own paths to it.
 */
export const CallerUrl = z
  .string()
  .min(1)
  .max(MAX_CALLER_URL_CHARS)
  .transform((raw, ctx) => {
    const got = canonicalCallerUrl(raw);
    const problem =
      "problem" in got
        ? got.problem
        : /[?#]/.test(got.href)
          ? "a query or fragment (the service appends its own paths to this base URL)"
          : undefined;
    if (!problem) return (got as { href: string }).href;
    ctx.addIssue({ code: "custom", message: `not accepted: ${problem}` });
    return z.NEVER;
  });

/** RFC 9110's token: what a header name may be made of. */
const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

/**
 * Header names the service or its HTTP stack owns (message framing, the connection, routing,
 * proxies, the WebSocket handshake): a secret header of one of these names would change what is
 * sent, or be thrown out by the HTTP client, so it is refused when registered.
 */
const RESERVED_HEADERS = new Set([
  "content-length",
  "transfer-encoding",
  "connection",
  "expect",
  "upgrade",
  "keep-alive",
  "host",
  "te",
  "trailer",
  "http2-settings",
]);
const RESERVED_HEADER_PREFIXES = ["proxy-", "sec-websocket-"];

/**
 * A header value as sent: visible ASCII, inner spaces and tabs; no CR, LF, NUL or other control, no padding the client
 * would strip.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\x21-\x7e \t]*[\x21-\x7e])?$/;

/** A header the endpoint wants on every request (its key): stored, never returned or logged. */
export const SecretHeader = z.strictObject({
  name: z
    .string()
    .regex(HEADER_TOKEN, "a header name: an HTTP token (letters, digits and !#$%&'*+-.^_`|~), at most 100 characters")
    .superRefine((name, ctx) => {
      const lower = name.toLowerCase();
      if (RESERVED_HEADERS.has(lower) || RESERVED_HEADER_PREFIXES.some((p) => lower.startsWith(p)))
        ctx.addIssue({
          code: "custom",
          message: `"${lower}" is a header the service's HTTP client sets (framing, connection, routing or proxy): not a secret header`,
        });
    }),
  value: z
    .string()
    .min(1)
    .max(4_096)
    .regex(
      HEADER_VALUE,
      "a header value: visible ASCII with inner spaces or tabs (no CR, LF, NUL or other control character)",
    ),
});
export type SecretHeader = z.infer<typeof SecretHeader>;
