import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Context, Hono, type MiddlewareHandler } from "hono";

/**
 * The console's built files (console/dist, made by `npm run build:console`), by their path under `/console/`, read
 * once.
 */
export type ConsoleAssets = ReadonlyMap<string, { body: Uint8Array; contentType: string }>;

/** Where `npm run build:console` writes the console in this checkout (serve reads it from here). */
export const CONSOLE_DIST = fileURLToPath(new URL("../../console/dist", import.meta.url));

/** The media type of each kind of file the console's build writes; any other file is not served. */
const MEDIA_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};
/** The most the console's files may hold in all: they are read into memory once. */
export const CONSOLE_ASSET_LIMITS = { maxFiles: 32, maxBytes: 4 * 1024 * 1024 } as const;

/**
 * What the console's pages may do: scripts and styles of its own only, requests to this origin only
 * (the API), images of its own or fetched as blobs (the plots), no frames, no referrer.
 */
export const CONSOLE_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' blob: data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
} as const;

/**
 * Reads the console's built files from `dir` (flat: index.html, app.js, app.css); undefined when the
 * folder is not there (the console was not built: the API serves no `/console`).
 *
 * @example
 * const assets = loadConsoleAssets(CONSOLE_DIST);
 */
export function loadConsoleAssets(dir: string): ConsoleAssets | undefined {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => MEDIA_TYPES[extname(n)] !== undefined && statSync(join(dir, n)).isFile());
  } catch {
    return undefined;
  }
  if (!names.includes("index.html")) return undefined;
  const files = new Map(
    names
      .slice(0, CONSOLE_ASSET_LIMITS.maxFiles)
      .map((n) => [n, { body: new Uint8Array(readFileSync(join(dir, n))), contentType: MEDIA_TYPES[extname(n)]! }]),
  );
  const bytes = [...files.values()].reduce((sum, f) => sum + f.body.byteLength, 0);
  if (bytes > CONSOLE_ASSET_LIMITS.maxBytes)
    throw new Error(`the console's files hold ${bytes} bytes, more than ${CONSOLE_ASSET_LIMITS.maxBytes}`);
  return files;
}

/** The console's headers on every answer under `/console` (its files and its 404s). */
const consoleHeaders = (): MiddlewareHandler => async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) c.res.headers.set(name, value);
};

/**
 * `/console` (mounted at the root): the web console's static files (GET and HEAD only; no key needed: the pages hold no
 * data until the tab signs in, and every API call they make carries the key as the API takes it).
 * `/console` and `/console/` answer its page (which names its files by absolute path); any name it
 * did not build is a 404.
 */
export function consoleApp(assets: ConsoleAssets): Hono {
  const serve = (c: Context, name: string) => {
    const found = assets.get(name);
    return found
      ? c.body(found.body as Uint8Array<ArrayBuffer>, 200, { "content-type": found.contentType })
      : c.text("not found", 404);
  };
  return new Hono()
    .use("/console/*", consoleHeaders())
    .use("/console", consoleHeaders())
    .get("/console", (c) => serve(c, "index.html"))
    .get("/console/", (c) => serve(c, "index.html"))
    .get("/console/:name", (c) => serve(c, c.req.param("name")));
}
