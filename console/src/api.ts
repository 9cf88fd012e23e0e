/**
 * The console's one way to the API: every call sends the tab's key as the Authorization header the
 * API takes, to this origin only. The key lives in this tab's sessionStorage (gone when the tab
 * closes), never in a URL, a cookie, localStorage or a log line.
 */
const KEY_ITEM = "harness-s.key";

/** The key of this tab, if it signed in. */
export const currentKey = (): string | null => sessionStorage.getItem(KEY_ITEM);
export const rememberKey = (secret: string) => sessionStorage.setItem(KEY_ITEM, secret);
/** Signing out forgets everything this tab kept (the key and the ids it opened). */
export const forgetKey = () => sessionStorage.clear();

/** An error answer of the API: its status, and its envelope's code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function call(path: string, init: { method?: string; body?: unknown; accept?: string } = {}): Promise<Response> {
  const key = currentKey();
  if (!key) throw new ApiError(401, "UNAUTHENTICATED", "sign in first");
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: init.accept ?? "application/json" };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method: init.method ?? "GET",
    headers,
    credentials: "omit",
    cache: "no-store",
    referrerPolicy: "no-referrer",
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  if (res.ok) return res;
  const envelope = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
  throw new ApiError(
    res.status,
    envelope.error?.code ?? `HTTP_${res.status}`,
    envelope.error?.message ?? res.statusText,
  );
}

/** A JSON answer. */
export const getJson = async <T>(path: string): Promise<T> => (await call(path)).json() as Promise<T>;
export const postJson = async <T>(path: string, body: unknown): Promise<T> =>
  (await call(path, { method: "POST", body })).json() as Promise<T>;
/** A text answer (the report's markdown, the CSV export). */
export const getText = async (path: string, accept = "text/plain"): Promise<string> =>
  (await call(path, { accept })).text();
/** A binary answer (a plot) as a blob: URL of this tab (the caller revokes it). */
export const getBlobUrl = async (path: string): Promise<string> =>
  URL.createObjectURL(await (await call(path, { accept: "image/png" })).blob());

/** Ids this tab opened, by kind, where the API lists none by key (decisions): kept in sessionStorage with the key. */
export const opened = {
  list: (kind: string): string[] => JSON.parse(sessionStorage.getItem(`harness-s.${kind}`) ?? "[]") as string[],
  add(kind: string, id: string) {
    const ids = [id, ...opened.list(kind).filter((i) => i !== id)].slice(0, 50);
    sessionStorage.setItem(`harness-s.${kind}`, JSON.stringify(ids));
  },
};

/** An error as a line for the page. */
export const describeError = (err: unknown): string =>
  err instanceof ApiError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);

/** A call with its method: PATCH and DELETE for the keys page. */
export const sendJson = async <T>(method: "PATCH" | "DELETE" | "POST", path: string, body?: unknown): Promise<T> =>
  (await call(path, { method, ...(body !== undefined ? { body } : {}) })).json() as Promise<T>;
