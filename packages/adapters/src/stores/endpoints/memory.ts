import type { PolicyEndpointRecord, PolicyEndpointStore } from "@harness-s/core/callers";

/** Registered policy endpoints in memory, per key; a put checks the limit and writes in one step (no await between). */
export class MemoryPolicyEndpointStore implements PolicyEndpointStore {
  private readonly byKey = new Map<string, Map<string, PolicyEndpointRecord>>();

  async put(record: PolicyEndpointRecord, limit: number): Promise<"created" | "replaced" | "full"> {
    const mine = this.byKey.get(record.keyId) ?? new Map<string, PolicyEndpointRecord>();
    const held = mine.has(record.id);
    if (!held && mine.size >= limit) return "full";
    mine.set(record.id, structuredClone(record));
    this.byKey.set(record.keyId, mine);
    return held ? "replaced" : "created";
  }

  async get(keyId: string, id: string): Promise<PolicyEndpointRecord | undefined> {
    const found = this.byKey.get(keyId)?.get(id);
    return found && structuredClone(found);
  }

  async list(keyId: string): Promise<PolicyEndpointRecord[]> {
    return [...(this.byKey.get(keyId)?.values() ?? [])].map((r) => structuredClone(r));
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    return this.byKey.get(keyId)?.delete(id) ?? false;
  }
}
