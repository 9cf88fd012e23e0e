import { describe, expect, it } from "vitest";
import { PolicyEndpointError } from "@harness-s/adapters";
import { scrubError, secretScrubber } from "../../packages/adapters/src/policy/scrub-secrets.ts";

// Issue 52, item 8: an endpoint or environment that echoes the headers it received must not hand
// the caller's secret to a log line or a rescue's status, in any spelling an echo could carry.
const SECRET = "Bearer tok_9f8e7d6c5b4a3210";
const scrub = secretScrubber([SECRET, undefined, "x-short"]);

describe("masking a caller's secrets in text from outside", () => {
  it("masks the value as sent, its credential alone, and its JSON-escaped, URL-encoded and base64 spellings", () => {
    const echoes = [
      `{"authorization":"${SECRET}"}`,
      "token was tok_9f8e7d6c5b4a3210 (expired)",
      `header: ${encodeURIComponent(SECRET)}`,
      `basic ${Buffer.from(SECRET).toString("base64")}`,
      `cred ${Buffer.from("tok_9f8e7d6c5b4a3210").toString("base64").replace(/=+$/, "")}`,
    ];
    for (const echo of echoes) {
      const out = scrub(echo);
      expect(out, echo).toContain("[secret]");
      expect(out, echo).not.toContain("tok_9f8e7d6c5b4a3210");
    }
    const quoted = secretScrubber(['say "hi" \\ now, ok'])(JSON.stringify({ v: 'say "hi" \\ now, ok' }));
    expect(quoted).toBe('{"v":"[secret]"}');
  });

  it("leaves text without a secret alone, and never masks a part too short to be one", () => {
    expect(scrub("the endpoint answered HTTP 400: bad request")).toBe("the endpoint answered HTTP 400: bad request");
    expect(scrub("Bearer x-short")).toBe("Bearer x-short");
    expect(secretScrubber([])("anything")).toBe("anything");
  });

  it("scrubs an error's message, stack and causes in place, keeping its class and code", () => {
    const err = new PolicyEndpointError(`POST /sample: HTTP 400 headers ${SECRET}`, {
      cause: new Error(`echo ${SECRET}`),
    });
    const out = scrubError(err, scrub);
    expect(out).toBe(err);
    expect(out.code).toBe("POLICY_ENDPOINT_FAILED");
    expect(`${out.message} ${out.stack} ${(out.cause as Error).message}`).not.toContain("tok_9f8e7d6c5b4a3210");
  });
});
