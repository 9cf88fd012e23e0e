import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

const anchorsOf = (page: string) => {
  const text = readFileSync(join(ROOT, page), "utf8").replace(/```[\s\S]*?```/g, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
};

/** Every relative link of a page: its target file and anchor. */
function linksOf(page: string): { text: string; file: string; anchor?: string }[] {
  const text = readFileSync(join(ROOT, page), "utf8")
    .replace(/```[\s\S]*?```/g, "")
    .replace(/`[^`\n]*`/g, "");
  return [...text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^(https?:|mailto:)/.test(target))
    .map((target) => {
      const [path, anchor] = target.split("#") as [string, string | undefined];
      return { text: target, file: path ? join(dirname(page), path) : page, ...(anchor ? { anchor } : {}) };
    });
}

describe("the README and docs/", () => {
  it("link only to files and headings that exist", () => {
    const broken: string[] = [];
    for (const page of PAGES)
      for (const link of linksOf(page)) {
        if (!existsSync(join(ROOT, link.file))) broken.push(`${page}: ${link.text} (no file ${link.file})`);
        else if (link.anchor && link.file.endsWith(".md") && !anchorsOf(link.file).has(link.anchor))
          broken.push(`${page}: ${link.text} (no heading #${link.anchor})`);
      }
    expect(broken).toEqual([]);
    expect(PAGES.flatMap(linksOf).length).toBeGreaterThan(10);
  });

  it("the README stays short: a newcomer reads it in five minutes", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(250);
  });

  it("anchors are GitHub's", () => {
    expect(slug("At token level: the suite LM, and block C3 (a null result)")).toBe(
      "at-token-level-the-suite-lm-and-block-c3-a-null-result",
    );
    expect(slug("Protocol v2 (token level)")).toBe("protocol-v2-token-level");
  });
});
