/**
 * Console records in memory (lock/store/console-records.ts), on the memory store's clock. Each
 * call does its work in one synchronous turn, which is what makes `take` atomic here.
 */
import { checkConsoleList, checkConsoleRecord, type ConsoleRecord, type ConsoleRecordStore } from '../console-records.js';

export class MemoryConsoleRecords implements ConsoleRecordStore {
  private readonly records = new Map<string, ConsoleRecord>();

  constructor(private readonly now: () => number) {}

  async put(record: { kind: string; id: string; value: string; ttlMillis: number }): Promise<ConsoleRecord> {
    checkConsoleRecord(record.kind, record.id, record.value, record.ttlMillis);
    this.sweep();
    const stored: ConsoleRecord = { kind: record.kind, id: record.id, value: record.value, expiresAt: this.now() + record.ttlMillis };
    this.records.set(slot(record.kind, record.id), stored);
    return { ...stored };
  }

  async get(kind: string, id: string): Promise<ConsoleRecord | null> {
    checkConsoleRecord(kind, id);
    const record = this.live(kind, id);
    return record ? { ...record } : null;
  }

  async take(kind: string, id: string): Promise<ConsoleRecord | null> {
    checkConsoleRecord(kind, id);
    const record = this.live(kind, id);
    if (record) this.records.delete(slot(kind, id));
    return record ? { ...record } : null;
  }

  async delete(kind: string, id: string): Promise<boolean> {
    checkConsoleRecord(kind, id);
    const record = this.live(kind, id);
    this.records.delete(slot(kind, id));
    return record !== null;
  }

  async list(kind: string, idPrefix: string, limit: number): Promise<ConsoleRecord[]> {
    checkConsoleList(kind, idPrefix, limit);
    const now = this.now();
    return [...this.records.values()]
      .filter((r) => r.kind === kind && r.id.startsWith(idPrefix) && r.expiresAt > now)
      .sort((a, b) => a.expiresAt - b.expiresAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit)
      .map((r) => ({ ...r }));
  }

  private live(kind: string, id: string): ConsoleRecord | null {
    const record = this.records.get(slot(kind, id));
    return record && record.expiresAt > this.now() ? record : null;
  }

  /** Expired records are dropped as new ones arrive, so memory stays bounded by the live ones. */
  private sweep(): void {
    const now = this.now();
    for (const [key, record] of this.records) if (record.expiresAt <= now) this.records.delete(key);
  }
}

function slot(kind: string, id: string): string {
  return `${kind}\n${id}`;
}
