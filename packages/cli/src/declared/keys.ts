import { z } from "zod";
import { KEY_LIMITS, KeyRate, Scope } from "@harness-s/core/access";
import { declareCommand, flag } from "../declare.ts";
import { int, num, url, UsageError } from "../flags.ts";
import type { KeysRequest } from "../commands/keys.ts";

/**
 * Where `keys` reads the acting key's secret when `--admin-key` is not given (read here, at the composition root), so
 * it stays out of shell history.
 */
export const ADMIN_KEY_VARIABLE = "HARNESS_S_ADMIN_KEY";

/** The word that removes a setting in `keys update` (`--quota none`). */
const NONE = "none";

const scopeList = z
  .string()
  .transform((v) => v.split(",").map((s) => s.trim()))
  .pipe(z.array(Scope).min(1));

/** `perSecond[:burst]`; the burst defaults to perSecond rounded up. */
const rateFlag = z
  .string()
  .transform((v, ctx) => {
    const m = /^(\d+(?:\.\d+)?)(?::(\d+))?$/.exec(v.trim());
    if (!m) {
      ctx.addIssue({ code: "custom", message: "write perSecond or perSecond:burst, e.g. 5 or 5:20" });
      return z.NEVER;
    }
    const perSecond = Number(m[1]);
    return { perSecond, burst: m[2] === undefined ? Math.max(1, Math.ceil(perSecond)) : Number(m[2]) };
  })
  .pipe(KeyRate);

/** A setting's value, or `none` (null: the API removes it). */
const noneOr = <S extends z.ZodType>(schema: S) =>
  z.string().transform((v, ctx): z.output<S> | null => {
    if (v === NONE) return null;
    const parsed = schema.safeParse(v);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", message: issue.message });
    return z.NEVER;
  });

/**
 * A key's settings as flags: each flag's value, placeholder, help and the API's field, declared once for create and
 * update.
 */
const SETTINGS = {
  label: { field: z.string().max(KEY_LIMITS.labelChars), arg: "<text>", about: "a label people read", wire: "label" },
  quota: { field: int(1), arg: "<n>", about: "requests allowed in total", wire: "requestQuota" },
  budgetUsd: {
    field: num((n) => n.positive()),
    arg: "<usd>",
    about: "what it may spend in total, in USD at the tariff",
    wire: "budgetUsd",
  },
  rate: {
    field: rateFlag,
    arg: "<perSecond[:burst]>",
    about: "its rate: requests per second, and the burst (default perSecond rounded up)",
    wire: "rate",
  },
  expires: {
    field: z.iso.datetime({ offset: true }),
    arg: "<iso>",
    about: "when it stops working, ISO 8601 (e.g. 2027-01-01T00:00:00Z)",
    wire: "expiresAt",
  },
} as const;
type Setting = keyof typeof SETTINGS;

const scopesAbout = `its scopes, comma-separated: ${Scope.options.join(", ")}`;

const connectionFlags = {
  url: flag(url, "<api>", "the API's base URL, e.g. http://127.0.0.1:18787"),
  adminKey: flag(
    z.string().min(1).optional(),
    "<secret>",
    `the acting key's secret: an admin key, or a key showing or rotating itself (default $${ADMIN_KEY_VARIABLE}, which keeps it out of shell history)`,
  ),
  timeoutSeconds: flag(
    num((n) => n.positive().max(600)).default(30),
    "<s>",
    "the longest one request may take (headers and body)",
  ),
  json: flag(z.boolean().default(false), null, "print the API's JSON reply as it is (for scripts)"),
};
type ConnectionFlags = z.infer<z.ZodObject<typeof connectionFlags>>;

const CreateFlags = z.strictObject({
  ...connectionFlags,
  scopes: flag(scopeList, "<a,b>", scopesAbout),
  label: flag(SETTINGS.label.field.optional(), SETTINGS.label.arg, `${SETTINGS.label.about} (default none)`),
  quota: flag(SETTINGS.quota.field.optional(), SETTINGS.quota.arg, `${SETTINGS.quota.about} (default unlimited)`),
  budgetUsd: flag(
    SETTINGS.budgetUsd.field.optional(),
    SETTINGS.budgetUsd.arg,
    `${SETTINGS.budgetUsd.about} (default unlimited)`,
  ),
  rate: flag(SETTINGS.rate.field.optional(), SETTINGS.rate.arg, `${SETTINGS.rate.about} (default unlimited)`),
  expires: flag(SETTINGS.expires.field.optional(), SETTINGS.expires.arg, `${SETTINGS.expires.about} (default never)`),
});

const kebab = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
const removable = (key: Setting) =>
  flag(noneOr(SETTINGS[key].field).optional(), SETTINGS[key].arg, `${SETTINGS[key].about}; ${NONE} removes it`);

const UpdateFlags = z
  .strictObject({
    ...connectionFlags,
    scopes: flag(scopeList.optional(), "<a,b>", `${scopesAbout} (replacing its scopes)`),
    label: removable("label"),
    quota: removable("quota"),
    budgetUsd: removable("budgetUsd"),
    rate: removable("rate"),
    expires: removable("expires"),
  })
  .superRefine((o, ctx) => {
    if (o.scopes === undefined && (Object.keys(SETTINGS) as Setting[]).every((k) => o[k] === undefined))
      ctx.addIssue({
        code: "custom",
        message: `nothing to change: give --scopes or any of ${Object.keys(SETTINGS).map(kebab).join(", ")}`,
      });
  });

/** The API's body from the setting flags given (an absent flag leaves its setting as it is). */
function settingsBody(o: { scopes?: Scope[] } & Partial<Record<Setting, unknown>>): Record<string, unknown> {
  const body: Record<string, unknown> = o.scopes === undefined ? {} : { scopes: o.scopes };
  for (const key of Object.keys(SETTINGS) as Setting[]) if (o[key] !== undefined) body[SETTINGS[key].wire] = o[key];
  return body;
}

/**
 * Sends one request with the connection flags; a refusal, timeout or unreachable API is one line `error [CODE]:
 * message` and exit 1.
 */
async function runKeys(o: ConnectionFlags, request: KeysRequest): Promise<void> {
  const secret = o.adminKey ?? process.env[ADMIN_KEY_VARIABLE];
  if (!secret) throw new UsageError(`no key to act with: give --admin-key or set $${ADMIN_KEY_VARIABLE}`);
  const { keysCommand } = await import("../commands/keys.ts");
  const { KeysRequestError } = await import("../commands/keys-client.ts");
  try {
    await keysCommand(request, { url: o.url, secret, timeoutMs: o.timeoutSeconds * 1000 }, o.json);
  } catch (err) {
    if (!(err instanceof KeysRequestError)) throw err;
    process.stderr.write(`error [${err.code}]: ${err.message}\n`);
    process.exitCode = 1;
  }
}

const idArg = [{ name: "<id>", description: "the key's id (as create and list show it)" }] as const;
const ConnectionOnly = z.strictObject(connectionFlags);

export const keysCreate = declareCommand({
  name: "keys create",
  summary: "Issue an API key with its scopes and limits; prints its secret once",
  flags: CreateFlags,
  run: (o) => runKeys(o, { action: "create", body: settingsBody(o) }),
});

export const keysList = declareCommand({
  name: "keys list",
  summary: "Every key (an admin key), or the acting key itself",
  flags: ConnectionOnly,
  run: (o) => runKeys(o, { action: "list" }),
});

export const keysShow = declareCommand({
  name: "keys show",
  summary: "One key: its status, scopes, limits and working secrets",
  args: idArg,
  flags: ConnectionOnly,
  run: (o, [id]) => runKeys(o, { action: "show", id: id! }),
});

export const keysUpdate = declareCommand({
  name: "keys update",
  summary: `Change a key's scopes or limits (${NONE} removes a limit); no key raises its own`,
  args: idArg,
  flags: UpdateFlags,
  run: (o, [id]) => runKeys(o, { action: "update", id: id!, body: settingsBody(o) }),
});

export const keysRotate = declareCommand({
  name: "keys rotate",
  summary: "A new secret for a key, printed once; the old ones keep working for the grace",
  args: idArg,
  flags: z.strictObject({
    ...connectionFlags,
    graceSeconds: flag(
      int(0, KEY_LIMITS.maxGraceSeconds).optional(),
      "<n>",
      `how long the secrets it replaces keep working (default ${KEY_LIMITS.defaultGraceSeconds}, the API's)`,
    ),
  }),
  run: (o, [id]) =>
    runKeys(o, {
      action: "rotate",
      id: id!,
      body: o.graceSeconds === undefined ? {} : { graceSeconds: o.graceSeconds },
    }),
});

export const keysRevoke = declareCommand({
  name: "keys revoke",
  summary: "Revoke a key: every request with it is a 401 from then on (its usage and records are kept)",
  args: idArg,
  flags: ConnectionOnly,
  run: (o, [id]) => runKeys(o, { action: "revoke", id: id! }),
});

export const keysEvents = declareCommand({
  name: "keys events",
  summary: "A key's operations, newest first: who did what, when",
  args: idArg,
  flags: ConnectionOnly,
  run: (o, [id]) => runKeys(o, { action: "events", id: id! }),
});
