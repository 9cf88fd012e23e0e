/**
 * What one OpenEnv server (`startOpenEnvServer`, `harness-s env-serve`) holds for its clients,
 * declared once: the command's flags and the server's options default to these. No import here,
 * so the command line can read them without loading the adapters.
 */
export const OPENENV_SERVER_DEFAULTS = {
  /** WebSocket sessions at once (each holds at most one episode). */
  maxSessions: 256,
  /** Sessions one remote address may hold at once, so one client cannot take them all. */
  maxSessionsPerAddress: 128,
  /** A session with no message from its client for this long is closed (`IDLE_CLOSE`). */
  sessionIdleSeconds: 600,
  /** The largest WebSocket message read (a larger one closes the session with 1009). */
  maxMessageBytes: 1 << 20,
  /** The largest HTTP request body read, in bytes. */
  maxBodyBytes: 1 << 20,
  /** An HTTP body must arrive within this, from its first byte to its last. */
  bodyTimeoutMs: 10_000,
  /** An HTTP request's headers must arrive within this; the whole request within `bodyTimeoutMs` more. */
  headersTimeoutMs: 10_000,
  /** Messages a session reads ahead of its answers; past them the socket is paused (TCP pushes back). */
  pendingMessages: 8,
  /** Answers buffered for a client that does not read them; past this the session is dropped. */
  maxBufferedBytes: 8 << 20,
} as const;
export type OpenEnvServerLimits = { -readonly [K in keyof typeof OPENENV_SERVER_DEFAULTS]: number };

/** The WebSocket close a session gets when it has been idle past its bound (1001: going away). */
export const IDLE_CLOSE = { code: 1001, reason: (seconds: number) => `idle: no message for ${seconds} s` } as const;
