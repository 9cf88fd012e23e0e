import { z } from "zod";

export const KeyAction = z.enum(["created", "updated", "rotated", "revoked"]);
export type KeyAction = z.infer<typeof KeyAction>;

/** One operation on a key: what, when, by which key; `changes` names the settings it set (never a secret). */
export const KeyEvent = z.object({
  keyId: z.string().min(1),
  at: z.number().int().nonnegative(),
  /** The key's version this operation wrote: its events are ordered by it (each written once). */
  version: z.number().int().nonnegative(),
  action: KeyAction,
  /** The key that did it (undefined: the deployment or a local command). */
  by: z.string().optional(),
  changes: z.record(z.string(), z.unknown()).optional(),
});
export type KeyEvent = z.infer<typeof KeyEvent>;

/** Events shown per read, newest first. */
export const KEY_EVENTS_PAGE = 100;

/** Each key's operations, in the order they happened (by the version each wrote). */
export interface KeyEventLog {
  append(event: KeyEvent): Promise<void>;
  /** The key's newest `limit` events, newest first. */
  list(keyId: string, limit: number): Promise<KeyEvent[]>;
}
