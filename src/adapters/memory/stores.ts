// All stores in this process's memory: one edge only (npm start, a Worker trial), on the given clock.
// `gate`: a claim gate to share with the booking origin in this process (npm start); else a new one.
import type { ClaimGate } from '../../ports/claim-gate.js'
import type { Stores } from '../../ports/stores.js'
import { MemoryAccessStore } from './access-store.js'
import { MemoryAdminSessions } from './admin-sessions.js'
import { MemoryAnalyticsStore } from './analytics-store.js'
import { MemoryAuditLog } from './audit-log.js'
import { MemoryClaimGate } from './claim-gate.js'
import { MemoryDefenceStore } from './defence-store.js'
import { MemoryQueueStore } from './queue-store.js'
import { MemorySettingsStore } from './settings-store.js'
import { MemoryTemplateStore } from './template-store.js'

export function memoryStores(now: () => number = Date.now, gate?: ClaimGate): Stores {
  const queue = new MemoryQueueStore(now)
  const defence = new MemoryDefenceStore(now)
  return {
    queue,
    settings: new MemorySettingsStore(),
    audit: new MemoryAuditLog(),
    adminSessions: new MemoryAdminSessions(now),
    defence,
    gate: gate ?? new MemoryClaimGate(now),
    // A minute's sample reads the line, the sessions and the totals from the two stores above.
    analytics: new MemoryAnalyticsStore((room, at) => ({ ...queue.minuteCounts(room, at), refused: defence.refusedTotals(room) }), now),
    templates: new MemoryTemplateStore(),
    access: new MemoryAccessStore(now),
  }
}
