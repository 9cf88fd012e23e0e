/** Shorter parts of a secret are not searched for on their own (they would match ordinary words). */
const MIN_PART_CHARS = 8;
const MASK = "[secret]";

/**
 * Each spelling of a secret value an echo could carry: as sent, its credential after an auth scheme, JSON-escaped,
 * URL-encoded, base64.
 */
function spellings(value: string): string[] {
  const parts = new Set([value]);
  const credential = /^\s*[A-Za-z][A-Za-z0-9._~+/-]*\s+(\S.*)$/.exec(value)?.[1];
  if (credential) parts.add(credential);
  for (const part of [...parts]) {
    parts.add(JSON.stringify(part).slice(1, -1));
    parts.add(encodeURIComponent(part));
    parts.add(Buffer.from(part).toString("base64").replace(/=+$/, ""));
  }
  return [...parts].filter((p) => p.length >= MIN_PART_CHARS).sort((a, b) => b.length - a.length);
}

/**
 * A function that masks every spelling of `secrets` in a text that came from outside (an
 * endpoint's error body, an environment's error message) before it is logged or returned: an
 * endpoint that echoes the headers it received must not hand the caller's secret to a log line.
 *
 * @example
 * const scrub = secretScrubber(["Bearer abc123def456"]);
 * scrub('{"authorization":"Bearer abc123def456"}'); // '{"authorization":"[secret]"}'
 */
export function secretScrubber(secrets: readonly (string | undefined)[]): (text: string) => string {
  const needles = [...new Set(secrets.flatMap((s) => (s ? spellings(s) : [])))];
  if (needles.length === 0) return (text) => text;
  return (text) => needles.reduce((out, needle) => out.split(needle).join(MASK), text);
}

/** The error with its message and stack (and its causes') scrubbed in place: its class and code stay what they were. */
export function scrubError<E>(err: E, scrub: (text: string) => string): E {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    e.message = scrub(e.message);
    if (e.stack) e.stack = scrub(e.stack);
  }
  return err;
}
