import { printable } from "@harness-s/core";
import type { KeyEventView, KeyView } from "@harness-s/core/access";

/** Columns padded to their widest cell, two spaces apart; every cell {@link printable}. */
export function table(header: readonly string[], cells: readonly (readonly string[])[]): string[] {
  const rows = cells.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [header, ...rows].map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd(),
  );
}

const quota = (k: KeyView) => (k.requestQuota === undefined ? "unlimited" : `${k.requestQuota} requests`);
const budget = (k: KeyView) => (k.budgetUsd === undefined ? "unlimited" : `$${k.budgetUsd}`);
const rate = (k: KeyView) => (k.rate === undefined ? "unlimited" : `${k.rate.perSecond}/s, burst ${k.rate.burst}`);
const expires = (k: KeyView) => k.expiresAt ?? "never";

function secrets(k: KeyView): string {
  if (k.status !== "active") return `none works (the key is ${k.status})`;
  const retiring = k.secrets.filter((s) => s.retiresAt !== undefined).map((s) => `one retiring at ${s.retiresAt}`);
  return [`${k.secrets.length} working`, ...retiring].join("; ");
}

/**
 * A key as labelled lines: what was done to it (if anything), its id and status, then each setting (an absent limit as
 * unlimited).
 */
export function keyLines(k: KeyView, done?: string): string[] {
  const rows: [string, string][] = [
    ["label", k.label ?? "-"],
    ["scopes", k.scopes.join(",")],
    ["quota", quota(k)],
    ["budget", budget(k)],
    ["rate", rate(k)],
    ["expires", expires(k)],
    ["created", `${k.createdAt}${k.createdBy ? ` by ${k.createdBy}` : ""}`],
    ...(k.revokedAt ? [["revoked", k.revokedAt] as [string, string]] : []),
    ["secrets", secrets(k)],
  ];
  return [
    printable(`${done ? `${done} ` : ""}key ${k.id} (${k.status})`),
    ...table(["", ""], rows)
      .slice(1)
      .map((line) => `  ${line}`),
  ];
}

/** Keys one a row. */
export function keyTable(keys: readonly KeyView[]): string[] {
  if (keys.length === 0) return ["no keys"];
  return table(
    ["ID", "STATUS", "SCOPES", "QUOTA", "BUDGET", "RATE", "EXPIRES", "LABEL"],
    keys.map((k) => [k.id, k.status, k.scopes.join(","), quota(k), budget(k), rate(k), expires(k), k.label ?? ""]),
  );
}

/** A key's events one a row, newest first (as the API lists them). */
export function eventTable(events: readonly KeyEventView[]): string[] {
  if (events.length === 0) return ["no events"];
  return table(
    ["AT", "ACTION", "BY", "CHANGES"],
    events.map((e) => [e.at, e.action, e.by ?? "-", e.changes ? JSON.stringify(e.changes) : ""]),
  );
}

/** The secret a create or rotate answered, labelled: the API keeps only its hash. */
export const secretLine = (secret: string) =>
  `secret (shown once, store it now; the API keeps only its hash): ${secret}`;
