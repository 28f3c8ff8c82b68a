// The AuditLog port: every admin change, who made it, when, and the state before and after.
//
// Two kinds of entry are kept apart, so that many cheap actions cannot push a change of settings
// or mode out of the log: changes (the actions in CHANGE_ACTIONS) are kept by age, for
// CHANGE_RETENTION_MS; every other entry (ending sessions, ...) is kept by count, the newest
// ACTION_CAP. `list` merges both, newest first.

export interface AuditEntry {
  /** ISO 8601 time of the change, from the edge's clock. It is also the entry's age for retention. */
  at: string
  who: string
  action: string
  room: string | null
  before: unknown
  after: unknown
}

/**
 * Changes of settings and mode, and access codes and invite links made or revoked (admin/access.ts):
 * kept by age, never pushed out by other entries.
 */
export const CHANGE_ACTIONS: readonly string[] = [
  'settings.update',
  'room.pause',
  'room.resume',
  'room.close',
  'access.create',
  'access.revoke',
  // Page templates (admin/templates.ts): a room's page changes with them.
  'template.create',
  'template.update',
  'template.delete',
]
/** How long changes are kept: 90 days. */
export const CHANGE_RETENTION_MS = 90 * 86_400_000
/** How many other entries are kept. */
export const ACTION_CAP = 1000

/** Bypass rules added, changed or removed (admin/bypass.ts): changes of a room's settings too. */
export const BYPASS_CHANGE_ACTIONS: readonly string[] = ['bypass.add', 'bypass.update', 'bypass.remove']

export const isChange = (action: string): boolean => CHANGE_ACTIONS.includes(action) || BYPASS_CHANGE_ACTIONS.includes(action)

export interface AuditQuery {
  /** Only changes (CHANGE_ACTIONS) or only the other entries; both when left out. */
  kind?: 'changes' | 'actions'
  /** The time now (ms): changes older than CHANGE_RETENTION_MS before it are left out. */
  now?: number
}

export interface AuditLog {
  /**
   * Adds an entry. Changes older than CHANGE_RETENTION_MS before this entry's `at` are dropped; the
   * other entries beyond the newest ACTION_CAP are dropped.
   */
  append(entry: AuditEntry): Promise<void>
  /** Newest first (by `at`; entries with the same `at` in the order they were appended). */
  list(limit?: number, query?: AuditQuery): Promise<AuditEntry[]>
}

/** The time of an entry in ms; a malformed `at` is refused. */
export function entryTime(entry: AuditEntry): number {
  const t = Date.parse(entry.at)
  if (Number.isNaN(t)) throw new TypeError(`audit entry "at" is not a time: ${String(entry.at).slice(0, 40)}`)
  return t
}
