import type { KeyEvent, KeyEventLog } from "@harness-s/core/access";

export class MemoryKeyEventLog implements KeyEventLog {
  private readonly events: KeyEvent[] = [];

  async append(event: KeyEvent): Promise<void> {
    this.events.push(structuredClone(event));
  }

  async list(keyId: string, limit: number): Promise<KeyEvent[]> {
    return this.events
      .filter((e) => e.keyId === keyId)
      .reverse()
      .slice(0, limit)
      .map((e) => structuredClone(e));
  }
}
