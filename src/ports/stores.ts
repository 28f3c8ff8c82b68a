// The stores an edge works with, as one bundle: built together on one Redis client (or in one
// process's memory), handed to assembleEdge together. The claim gate rides along: the origin writes
// it, the edge only reads its counts.
import type { AccessStore } from './access-store.js'
import type { AdminSessions } from './admin-sessions.js'
import type { AnalyticsStore } from './analytics-store.js'
import type { AuditLog } from './audit-log.js'
import type { ClaimGate } from './claim-gate.js'
import type { DefenceStore } from './defence-store.js'
import type { QueueStore } from './queue-store.js'
import type { SettingsStore } from './settings-store.js'
import type { TemplateStore } from './template-store.js'

export interface Stores {
  queue: QueueStore
  settings: SettingsStore
  audit: AuditLog
  adminSessions: AdminSessions
  defence: DefenceStore
  /** Events' stock, kept by the booking origin; the edge reads its counts (a room's `event` setting). */
  gate: ClaimGate
  /** Each room's minutes, kept 30 days for the post-event report. */
  analytics: AnalyticsStore
  /** The rooms' page templates (a room's `template` setting). */
  templates: TemplateStore
  /** Each room's access codes and invite links, and their uses. */
  access: AccessStore
}
