// The AuditLog port: every admin change, who made it, when, and the state before and after.

export interface AuditEntry {
  at: string
  who: string
  action: string
  room: string | null
  before: unknown
  after: unknown
}

export interface AuditLog {
  append(entry: AuditEntry): Promise<void>
  /** Newest first. */
  list(limit?: number): Promise<AuditEntry[]>
}
