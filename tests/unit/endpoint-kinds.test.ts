import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ENDPOINT_KINDS, TokenMode } from "@harness-s/core/callers";
import { ENDPOINT_KIND_ADAPTERS } from "@harness-s/adapters/policy";

// Issue 68 item 2: an endpoint kind is declared once (core's ENDPOINT_KINDS: its token modes and
// chat path) and behaves in one file (its adapter: sampler, version, probe); the Python client's
// kinds and modes are the same lists.

/** A `Name = Literal["a", "b"]` of the client's types, as its strings. */
const literal = (name: string) => {
  const src = readFileSync("packages/client-py/harness_s_client/types.py", "utf8");
  const found = src.match(new RegExp(`^${name} = Literal\\[([^\\]]*)\\]`, "m"));
  expect(found, `${name} in the client's types.py`).not.toBeNull();
  return [...found![1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
};

describe("endpoint kinds", () => {
  it("each kind core declares has one adapter, and no adapter is of a kind core does not declare", () => {
    expect(Object.keys(ENDPOINT_KIND_ADAPTERS).sort()).toEqual(Object.keys(ENDPOINT_KINDS).sort());
    for (const adapter of Object.values(ENDPOINT_KIND_ADAPTERS))
      expect(Object.keys(adapter).sort()).toEqual(["currentVersion", "probe", "sampler"]);
  });

  it("the Python client names the same kinds and token modes, in the same order", () => {
    expect(literal("EndpointKind")).toEqual(Object.keys(ENDPOINT_KINDS));
    expect(literal("TokenMode")).toEqual(TokenMode.options);
  });
});
