import { z } from "zod";
import { KeyEventView, KeyView } from "@harness-s/core/access";
import { type KeysCall, type KeysConnection, KeysRequestError, sendKeysCall } from "./keys-client.ts";
import { eventTable, keyLines, keyTable, secretLine } from "./keys-format.ts";

/**
 * What one `harness-s keys …` asks the API for (bodies as the API reads them: times ISO 8601, `null` removes a
 * setting).
 */
export type KeysRequest =
  | { action: "create"; body: Record<string, unknown> }
  | { action: "list" }
  | { action: "show" | "revoke" | "events"; id: string }
  | { action: "update"; id: string; body: Record<string, unknown> }
  | { action: "rotate"; id: string; body: Record<string, unknown> };

const Created = z.object({ key: KeyView, secret: z.string() });

/** Each action's call, and how its reply reads to a person. */
function plan(r: KeysRequest): KeysCall & { render: (reply: unknown) => string[] } {
  const one = (id: string) => `/${encodeURIComponent(id)}`;
  switch (r.action) {
    case "create":
      return { method: "POST", path: "", body: r.body, render: (reply) => created("created", Created.parse(reply)) };
    case "list":
      return {
        method: "GET",
        path: "",
        render: (reply) => keyTable(z.object({ keys: z.array(KeyView) }).parse(reply).keys),
      };
    case "show":
      return { method: "GET", path: one(r.id), render: (reply) => keyLines(KeyView.parse(reply)) };
    case "update":
      return {
        method: "PATCH",
        path: one(r.id),
        body: r.body,
        render: (reply) => keyLines(KeyView.parse(reply), "updated"),
      };
    case "rotate":
      return {
        method: "POST",
        path: `${one(r.id)}/rotate`,
        body: r.body,
        render: (reply) => created("rotated", Created.parse(reply)),
      };
    case "revoke":
      return { method: "DELETE", path: one(r.id), render: (reply) => keyLines(KeyView.parse(reply), "revoked") };
    case "events":
      return {
        method: "GET",
        path: `${one(r.id)}/events`,
        render: (reply) => eventTable(z.object({ events: z.array(KeyEventView) }).parse(reply).events),
      };
  }
}

const created = (verb: string, { key, secret }: z.infer<typeof Created>) => [
  ...keyLines(key, verb),
  secretLine(secret),
];

/**
 * Runs one `keys` action against the API: prints the reply's JSON as it came (`json`), or as
 * lines a person reads. A refusal, timeout or unreadable reply is a {@link KeysRequestError}.
 */
export async function keysCommand(
  request: KeysRequest,
  connection: KeysConnection,
  json: boolean,
  print: (line: string) => void = console.log,
): Promise<void> {
  const { render, ...call } = plan(request);
  const text = await sendKeysCall(connection, call);
  if (json) return print(text);
  let lines: string[];
  try {
    lines = render(JSON.parse(text));
  } catch (err) {
    throw new KeysRequestError(
      "BAD_REPLY",
      `${call.method} /v1/keys${call.path}: the reply is not a keys reply (${(err as Error).message.slice(0, 200)}); --json prints it as it is`,
    );
  }
  for (const line of lines) print(line);
}
