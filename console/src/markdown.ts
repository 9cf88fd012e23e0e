import { Marked, type Tokens } from "marked";

/**
 * The URL schemes a report's link may use; anything else (javascript:, data:, vbscript:, file:, blob:) is shown as
 * text.
 */
const LINK_SCHEMES = ["http", "https", "mailto"];

const escapeAttr = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** What a browser drops from a URL before it reads its scheme: spaces, tabs, newlines and other control characters. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the control characters a browser drops from a URL
const IGNORED_IN_URLS = /[\u0000-\u0020\u007f-\u009f]/g;

/**
 * `href` as a browser reads it: character references decoded, and the tabs, newlines and controls it ignores taken out.
 */
function asBrowserReads(href: string): string {
  const decoded = href.replace(/&#(x[0-9a-f]+|\d+);?/gi, (_, n: string) =>
    String.fromCodePoint(n[0]!.toLowerCase() === "x" ? Number.parseInt(n.slice(1), 16) : Number(n)),
  );
  return decoded.replace(IGNORED_IN_URLS, "");
}

/** A link target that is safe to follow: relative (no scheme), or one of {@link LINK_SCHEMES}; undefined otherwise. */
export function safeLink(href: string): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(asBrowserReads(href))?.[1]?.toLowerCase();
  return scheme === undefined || LINK_SCHEMES.includes(scheme) ? href : undefined;
}

/**
 * A run's markdown report as HTML: raw HTML in it shown as text, never run; a link kept only with
 * a safe target ({@link safeLink}), else its text alone; an image shown only when it names one of
 * the run's plots (`images`: file name → the object URL it was loaded into), else its alt text.
 */
export function renderReport(md: string, images: Readonly<Record<string, string>> = {}): string {
  const marked = new Marked({
    renderer: {
      link(this: { parser: { parseInline: (t: Tokens.Link["tokens"]) => string } }, token: Tokens.Link) {
        const text = this.parser.parseInline(token.tokens);
        const href = safeLink(token.href);
        return href === undefined
          ? text
          : `<a href="${escapeAttr(href)}"${token.title ? ` title="${escapeAttr(token.title)}"` : ""} rel="noopener noreferrer">${text}</a>`;
      },
      image(token: Tokens.Image) {
        const src = Object.hasOwn(images, token.href) ? images[token.href] : undefined;
        return src === undefined
          ? escapeAttr(token.text)
          : `<img src="${escapeAttr(src)}" alt="${escapeAttr(token.text)}" data-report-image="${escapeAttr(token.href)}" />`;
      },
    },
  });
  return marked.parse(md.replace(/</g, "&lt;"), { async: false }) as string;
}
