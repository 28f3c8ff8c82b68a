// AuditLog in process memory: changes of settings and mode for 90 days, and the newest 1,000 other
// entries, each list newest first.
import {
  ACTION_CAP,
  type AuditEntry,
  type AuditLog,
  type AuditQuery,
  CHANGE_RETENTION_MS,
  entryTime,
  isChange,
} from '../../ports/audit-log.js'

interface Kept {
  seq: number
  t: number
  entry: AuditEntry
}

export class MemoryAuditLog implements AuditLog {
  private seq = 0
  private changes: Kept[] = []
  private readonly actions: Kept[] = []

  async append(entry: AuditEntry): Promise<void> {
    const kept = { seq: ++this.seq, t: entryTime(entry), entry: structuredClone(entry) }
    const cutoff = kept.t - CHANGE_RETENTION_MS
    this.changes = this.changes.filter((k) => k.t >= cutoff)
    if (isChange(entry.action)) this.changes.unshift(kept)
    else {
      this.actions.unshift(kept)
      if (this.actions.length > ACTION_CAP) this.actions.length = ACTION_CAP
    }
  }

  async list(limit = 100, query: AuditQuery = {}): Promise<AuditEntry[]> {
    const cutoff = query.now === undefined ? Number.NEGATIVE_INFINITY : query.now - CHANGE_RETENTION_MS
    const changes = query.kind === 'actions' ? [] : this.changes.filter((k) => k.t >= cutoff)
    const actions = query.kind === 'changes' ? [] : this.actions
    return [...changes, ...actions]
      .sort((a, b) => b.t - a.t || b.seq - a.seq)
      .slice(0, Math.max(0, limit))
      .map((k) => structuredClone(k.entry))
  }
}
