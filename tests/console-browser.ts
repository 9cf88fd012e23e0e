import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, type Page, chromium } from "playwright-core";
import { CONSOLE_DIST, loadConsoleAssets, type ConsoleAssets } from "../functions/api/console.ts";

/** Debian's Chromium (scripts/ensure-chromium.sh installs it; Playwright downloads no browser of its own). */
export const CHROMIUM = "/usr/bin/chromium";
/** Headless, and quiet: no GPU, no QUIC, no first-run, background or update traffic of the browser's own. */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Where the console test's screenshots go: docs/console (committed, shown by docs/operations.md) only
 * when HARNESS_S_SCREENSHOTS=docs asks, else results/console (git-ignored), so a plain run leaves the
 * working tree clean.
 */
export const SCREENSHOTS = {
  variable: "HARNESS_S_SCREENSHOTS",
  docs: "docs/console/",
  artifacts: "results/console/",
} as const;

/** The folder (absolute, made if missing) this run's screenshots go to, per {@link SCREENSHOTS}. */
export function screenshotsDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = fileURLToPath(
    new URL(`../${env[SCREENSHOTS.variable] === "docs" ? SCREENSHOTS.docs : SCREENSHOTS.artifacts}`, import.meta.url),
  );
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Builds the console (scripts/build-console.mjs, ~0.2 s) and reads its files as the API serves them. */
export function builtConsole(): ConsoleAssets {
  execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build-console.mjs", import.meta.url))], {
    stdio: "pipe",
  });
  const assets = loadConsoleAssets(CONSOLE_DIST);
  if (!assets) throw new Error(`no console built in ${CONSOLE_DIST}`);
  return assets;
}

/**
 * The machine's Chromium under Playwright; `launch` gives each run a fresh temporary profile
 * (user-data-dir) of its own, and each context is a fresh, incognito-like profile within it.
 */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });

/** What a tab did that a test reads back: every request's URL and method, and every console line. */
export interface Captured {
  requests: { method: string; url: string; headers: Record<string, string> }[];
  consoleLines: string[];
}

/** A fresh context (viewport 1280x800) and page, recording every request and console line. */
export async function openTab(browser: Browser, captured: Captured): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.on("request", (r) => captured.requests.push({ method: r.method(), url: r.url(), headers: r.headers() }));
  const page = await context.newPage();
  page.on("console", (m) => captured.consoleLines.push(m.text()));
  page.on("pageerror", (e) => captured.consoleLines.push(`pageerror: ${e.message}`));
  return { context, page };
}

/**
 * What outlives the tab in its context: localStorage, cookies, IndexedDB's databases (sessionStorage does not: it is
 * read apart).
 */
export async function lastingStorage(context: BrowserContext, page: Page) {
  const inPage = await page.evaluate(async () => ({
    localStorage: Object.entries(localStorage),
    cookie: document.cookie,
    indexedDb: (await indexedDB.databases()).map((d) => d.name ?? ""),
  }));
  return { ...inPage, cookies: await context.cookies() };
}

/** Signs the tab in with `secret` through the console's form, and waits until it names the key. */
export async function signIn(page: Page, baseUrl: string, secret: string, keyId: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.fill("#key", secret);
  await page.click("button[type=submit]");
  await page.getByTestId("me").filter({ hasText: keyId }).waitFor();
}
