// All stores on one Redis client. Node hands in the Lua read from disk, the Worker the bundled text.
import type { Cluster, Redis } from 'ioredis'
import type { Stores } from '../../ports/stores.js'
import { RedisAccessStore } from './access-store.js'
import { RedisAdminSessions } from './admin-sessions.js'
import { RedisAnalyticsStore } from './analytics-store.js'
import { RedisAuditLog } from './audit-log.js'
import { RedisClaimGate } from './claim-gate.js'
import { RedisDefenceStore } from './defence-store.js'
import { RedisQueueStore } from './queue-store.js'
import type { Scripts } from './scripts.js'
import { RedisSettingsStore } from './settings-store.js'
import { RedisTemplateStore } from './template-store.js'

export function redisStores(redis: Redis | Cluster, scripts: Scripts): Stores {
  return {
    queue: new RedisQueueStore(redis, scripts),
    settings: new RedisSettingsStore(redis, scripts),
    audit: new RedisAuditLog(redis),
    adminSessions: new RedisAdminSessions(redis),
    defence: new RedisDefenceStore(redis, scripts),
    gate: new RedisClaimGate(redis, scripts),
    analytics: new RedisAnalyticsStore(redis, scripts),
    templates: new RedisTemplateStore(redis, scripts),
    access: new RedisAccessStore(redis, scripts),
  }
}
