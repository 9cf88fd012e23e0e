import type { KeyEvent, KeyEventLog } from "@harness-s/core/access";

export class MemoryKeyEventLog implements KeyEventLog {
  private readonly events: KeyEvent[] = [];

  async append(event: KeyEvent): Promise<void> {
    const i = this.events.findIndex((e) => e.keyId === event.keyId && e.version === event.version);
    if (i >= 0) this.events.splice(i, 1);
    this.events.push(structuredClone(event));
  }

  async list(keyId: string, limit: number): Promise<KeyEvent[]> {
    return this.events
      .filter((e) => e.keyId === keyId)
      .sort((a, b) => b.version - a.version)
      .slice(0, limit)
      .map((e) => structuredClone(e));
  }
}
