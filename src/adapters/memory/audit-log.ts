// AuditLog in process memory: the newest 1,000 entries.
import type { AuditEntry, AuditLog } from '../../ports/audit-log.js'

export class MemoryAuditLog implements AuditLog {
  private readonly entries: AuditEntry[] = []

  async append(entry: AuditEntry): Promise<void> {
    this.entries.unshift(entry)
    if (this.entries.length > 1000) this.entries.length = 1000
  }

  async list(limit = 100): Promise<AuditEntry[]> {
    return this.entries.slice(0, limit)
  }
}
