import { describe, expect, it } from "vitest";
import { ValidationError, createPool, matchesEvent, parseHarnessSpec, parsePool } from "@harness-s/core";
import { makeSpec } from "../factories.ts";

describe("parseHarnessSpec", () => {
  it("fills defaults for a minimal spec", () => {
    const spec = parseHarnessSpec({ id: "h0", budget: { maxTurns: 10 }, provenance: { direction: "base" } });
    expect(spec.postObservation).toEqual([]);
    expect(spec.commitGate).toBeNull();
    expect(spec.version).toBe(1);
  });

  it("names every bad field by path in a readable message", () => {
    const act = () =>
      parseHarnessSpec({
        id: "Bad Id",
        budget: { maxTurns: 0 },
        postObservation: [{ on: "", hint: "login" }],
        provenance: { direction: "sideways" },
      });
    expect(act).toThrow(ValidationError);
    try {
      act();
    } catch (err) {
      const e = err as ValidationError;
      expect(e.code).toBe("VALIDATION_FAILED");
      expect(e.message).toContain('harness spec "Bad Id" is invalid');
      expect(e.issues.some((i) => i.startsWith("id:"))).toBe(true);
      expect(e.issues.some((i) => i.startsWith("budget.maxTurns:"))).toBe(true);
      expect(e.issues.some((i) => i.startsWith("postObservation.0.on:"))).toBe(true);
      expect(e.issues.some((i) => i.startsWith("provenance.direction:"))).toBe(true);
    }
  });

  it("refuses a forced submit before the warning (soft before hard)", () => {
    expect(() => makeSpec({ budget: { maxTurns: 10, warnAt: 1, forceSubmitAt: 2 } })).toThrow(
      /forceSubmitAt must not exceed warnAt/,
    );
  });

  it("matches events exactly or by prefix", () => {
    expect(matchesEvent("error:*", "error:401")).toBe(true);
    expect(matchesEvent("error:401", "error:400")).toBe(false);
    expect(matchesEvent("page:more", "page:more")).toBe(true);
  });
});

describe("pools", () => {
  it("versions pools by content and detects tampering", () => {
    const base = makeSpec();
    const sib = makeSpec({ id: "sib-a", provenance: { direction: "recovery" } });
    const pool = createPool("p", base, [sib]);
    expect(createPool("p", base, [sib]).version).toBe(pool.version);
    expect(parsePool(JSON.parse(JSON.stringify(pool)))).toEqual(pool);
    const tampered = { ...pool, siblings: [{ ...sib, description: "edited" }] };
    expect(() => parsePool(tampered)).toThrow(/does not match its content/);
  });

  it("refuses duplicate harness ids", () => {
    expect(() => createPool("p", makeSpec(), [makeSpec()])).toThrow(/duplicate harness id h0/);
  });
});
