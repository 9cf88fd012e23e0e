import { once } from "node:events";
import { connect, type Socket } from "node:net";

// A WebSocket client written from RFC 6455 on a raw TCP socket, so a test can send what the `ws`
// package will not: invalid UTF-8 in a text frame, unmasked or reserved frames, a length it never
// sends, fragments out of order, bytes after a close.

export const OP = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** One frame as a client sends it (masked unless told otherwise); `declaredLength` may lie about the payload. */
export function frame(
  opcode: number,
  payload: Buffer | string,
  o: { fin?: boolean; mask?: boolean; rsv?: number; declaredLength?: number } = {},
): Buffer {
  const body = Buffer.from(payload);
  const length = o.declaredLength ?? body.length;
  const masked = o.mask ?? true;
  const head = [((o.fin ?? true) ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | opcode];
  let extended = Buffer.alloc(0);
  if (length < 126) head.push((masked ? 0x80 : 0) | length);
  else if (length < 65_536) {
    head.push((masked ? 0x80 : 0) | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(length);
  } else {
    head.push((masked ? 0x80 : 0) | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(BigInt(length));
  }
  const key = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);
  if (masked) for (let i = 0; i < body.length; i++) body[i]! ^= key[i % 4]!;
  return Buffer.concat([Buffer.from(head), extended, masked ? key : Buffer.alloc(0), body]);
}

export const textFrame = (text: string | Buffer) => frame(OP.text, text);
export const closeFrame = (code: number, reason = "") => {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code);
  payload.write(reason, 2);
  return frame(OP.close, payload);
};

/** What the server sent on a raw session: its text messages, and its close (code and reason) once it closed. */
export interface RawSession {
  socket: Socket;
  texts: string[];
  close?: { code: number; reason: string };
  /** Resolves when the server sends `n` text messages in all, or closes, or after `ms`. */
  waitFor(n: number, ms: number): Promise<void>;
  /** Resolves when the TCP connection has ended, or after `ms` (true when it ended). */
  ended(ms: number): Promise<boolean>;
}

/** Opens a raw WebSocket session at `/ws` (the handshake by hand); rejects with the status line when refused. */
export async function openRaw(port: number, path = "/ws"): Promise<RawSession> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => undefined);
  await once(socket, "connect");
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let buffer = Buffer.alloc(0);
  const session: RawSession = { socket, texts: [], waitFor: async () => undefined, ended: async () => false };
  let handshaken = false;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of [...listeners]) l();
  };
  let isEnded = false;
  const parse = () => {
    while (buffer.length >= 2) {
      const opcode = buffer[0]! & 0x0f;
      let length = buffer[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffer.length < 4) return;
        length = buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffer.length < 10) return;
        length = Number(buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (buffer.length < offset + length) return;
      const payload = buffer.subarray(offset, offset + length);
      buffer = buffer.subarray(offset + length);
      if (opcode === OP.text) session.texts.push(payload.toString("utf8"));
      if (opcode === OP.close && !session.close) {
        session.close = {
          code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005,
          reason: payload.subarray(2).toString("utf8"),
        };
        if (socket.writable) socket.end(frame(OP.close, payload.subarray(0, 2)));
      }
    }
  };
  const handshake = new Promise<void>((resolve, reject) => {
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!handshaken) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const status = buffer.subarray(0, buffer.indexOf("\r\n")).toString();
        if (!/^HTTP\/1\.1 101 /.test(status)) return reject(new Error(status));
        handshaken = true;
        buffer = buffer.subarray(end + 4);
        resolve();
      }
      parse();
      notify();
    });
    socket.on("close", () => {
      isEnded = true;
      notify();
      reject(new Error("closed before the handshake"));
    });
  });
  await handshake;
  const until = (done: () => boolean, ms: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!done()) return;
        clearTimeout(timer);
        listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        resolve();
      }, ms);
      listeners.add(check);
      check();
    });
  session.waitFor = (n, ms) => until(() => session.texts.length >= n || session.close !== undefined || isEnded, ms);
  session.ended = async (ms) => {
    await until(() => isEnded, ms);
    return isEnded;
  };
  return session;
}
