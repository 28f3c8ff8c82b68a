// The stores an edge works with, as one bundle: built together on one Redis client (or in one
// process's memory), handed to assembleEdge together.
import type { AdminSessions } from './admin-sessions.js'
import type { AuditLog } from './audit-log.js'
import type { DefenceStore } from './defence-store.js'
import type { QueueStore } from './queue-store.js'
import type { SettingsStore } from './settings-store.js'

export interface Stores {
  queue: QueueStore
  settings: SettingsStore
  audit: AuditLog
  adminSessions: AdminSessions
  defence: DefenceStore
}
