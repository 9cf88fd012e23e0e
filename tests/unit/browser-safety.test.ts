import { describe, expect, it } from "vitest";
import { renderReport } from "../../console/src/markdown.ts";

// Issue 67 item 13: a report's links keep only safe targets; the console's CSP is a second wall,
// not the first. Each hostile target renders as its text alone.

describe("the console's report markdown", () => {
  it.each([
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    "&#106;avascript:alert(1)",
    "&#x6A;avascript:alert(1)",
    " javascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "blob:https://evil/x",
  ])("drops the link target %s, keeping its text", (href) => {
    const html = renderReport(`see [the plot](${href.includes(" ") || href.includes("\t") ? `<${href}>` : href})`);
    expect(html).not.toMatch(/href=/);
    expect(html).toContain("the plot");
  });

  it.each([
    "https://example.com/paper",
    "http://example.com/",
    "mailto:ops@example.com",
    "#results",
    "curves.png",
    "/v1/experiments/x/report",
  ])("keeps the link target %s", (href) => {
    expect(renderReport(`[x](${href})`)).toContain(`href="${href}"`);
  });

  it("shows an image only when it names one of the run's plots, from the object URL it was loaded into; raw HTML stays text", () => {
    const html = renderReport(
      "![curves](curves.png) ![x](https://evil/pixel.png) ![y](data:image/png;base64,AAAA) <img src=x onerror=alert(1)>",
      {
        "curves.png": "blob:http://127.0.0.1/abc",
      },
    );
    expect(html).toContain('<img src="blob:http://127.0.0.1/abc" alt="curves" data-report-image="curves.png" />');
    expect(html).not.toContain("evil");
    expect(html).not.toContain("data:image");
    expect(html).not.toMatch(/<img src="x"/);
  });
});

describe("the API's answers (issue 67 item 13)", () => {
  it("carry X-Content-Type-Options: nosniff, successes, errors and unknown routes alike", async () => {
    const { createApp } = await import("../../functions/api/app.ts");
    const { memoryApiDeps } = await import("../../functions/api/local.ts");
    const app = createApp(memoryApiDeps());
    for (const [path, status] of [
      ["/health", 200],
      ["/openapi.json", 200],
      ["/v1/pools", 401],
      ["/v1/nowhere", 404],
    ] as const) {
      const res = await app.request(path);
      expect([path, res.status, res.headers.get("x-content-type-options")]).toEqual([path, status, "nosniff"]);
    }
  });
});
