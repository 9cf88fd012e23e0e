import { describe, expect, it } from "vitest";
import { renderUsage, zeroUsage, type UsageRow } from "@harness-s/core/billing";

// Issue 52 item 17: the usage export's CSV must not carry a formula into a spreadsheet (OWASP's
// CSV injection guidance): a text cell that starts with = + - @, a tab or a carriage return is
// written with a single quote before it, and every text cell is quoted; numbers stay numbers.

const row = (over: Partial<UsageRow>): UsageRow => ({
  keyId: "alice",
  day: "2026-12-03",
  usage: { ...zeroUsage, rollouts: 3 },
  costOfGoodsUsd: 0.0000008,
  chargeUsd: 0.0006,
  ...over,
});
/** One CSV record split into cells (RFC 4180: quoted cells, "" for a quote inside one). */
function cells(line: string): string[] {
  return [...line.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => m[1]!);
}
const LEADING = ["=", "+", "-", "@", "\t", "\r"];
const TEXT_COLUMNS = ["keyId", "day"] as const;

describe("the usage export as CSV", () => {
  it.each(TEXT_COLUMNS.flatMap((column) => LEADING.map((lead) => [column, lead] as const)))(
    "writes a %s starting with %j as text: a single quote before it, the cell quoted",
    (column, lead) => {
      const hostile = `${lead}HYPERLINK("http://127.0.0.1/?x="&A1,"ok")`;
      const [header, line] = renderUsage([row({ [column]: hostile })], "csv").split("\n");
      const at = header!.split(",").indexOf(column);
      expect(cells(line!)[at]).toBe(`"'${hostile.replace(/"/g, '""')}"`);
      // JSON lines are data, not a sheet: the value as it is
      expect(JSON.parse(renderUsage([row({ [column]: hostile })], "jsonl"))[column]).toBe(hostile);
    },
  );

  it("quotes every text cell, so a separator or a quote inside one cannot start a new cell, and leaves safe text as it is", () => {
    const line = renderUsage([row({ keyId: 'a,=1+2;"b"' }), row({ keyId: "plain" })], "csv").split("\n");
    expect(cells(line[1]!).slice(0, 2)).toEqual(['"a,=1+2;""b"""', '"2026-12-03"']);
    expect(cells(line[2]!).slice(0, 2)).toEqual(['"plain"', '"2026-12-03"']);
    expect(line[0]!.startsWith("keyId,day,")).toBe(true);
  });

  it("keeps numbers numbers, a negative one included (a number is never a formula): unquoted, no quote before it", () => {
    const [, line] = renderUsage(
      [row({ usage: { ...zeroUsage, rollouts: -3, sqsRequests: 2 }, costOfGoodsUsd: -0.5, chargeUsd: 1e-7 })],
      "csv",
    ).split("\n");
    const [header] = renderUsage([], "csv").split("\n");
    const named = Object.fromEntries(header!.split(",").map((h, i) => [h, cells(line!)[i]]));
    expect(named).toMatchObject({ rollouts: "-3", sqsRequests: "2", costOfGoodsUsd: "-0.5", chargeUsd: "1e-7" });
  });
});
