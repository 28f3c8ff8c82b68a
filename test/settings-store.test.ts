import { Redis } from 'ioredis'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { MemoryAdminSessions } from '../src/adapters/memory/admin-sessions.js'
import { MemoryAuditLog } from '../src/adapters/memory/audit-log.js'
import { MemorySettingsStore } from '../src/adapters/memory/settings-store.js'
import { RedisAdminSessions } from '../src/adapters/redis/admin-sessions.js'
import { RedisAuditLog } from '../src/adapters/redis/audit-log.js'
import { adminSessionKey } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { RedisSettingsStore } from '../src/adapters/redis/settings-store.js'
import { settingsStoreContract } from './contract/settings-store.js'
import { ManualClock } from './support/clock.js'

const clients: Redis[] = []
afterAll(() => {
  for (const c of clients) c.disconnect()
})

settingsStoreContract('memory', async () => ({
  settings: new MemorySettingsStore(),
  audit: new MemoryAuditLog(),
  adminSessions: new MemoryAdminSessions(),
}))
settingsStoreContract('redis', async () => {
  const redis = new Redis(inject('redisUrl'))
  clients.push(redis)
  return {
    settings: new RedisSettingsStore(redis, luaScripts()),
    audit: new RedisAuditLog(redis),
    adminSessions: new RedisAdminSessions(redis),
  }
})

describe('ended admin sessions are forgotten when their cookies would have expired', () => {
  it('memory: on its clock', async () => {
    const clock = new ManualClock(1_000)
    const sessions = new MemoryAdminSessions(() => clock.now())
    await sessions.revoke('s1', 60_000)
    clock.advance(59_999)
    expect(await sessions.isRevoked('s1')).toBe(true)
    clock.advance(1)
    expect(await sessions.isRevoked('s1')).toBe(false)
  })

  it('redis: the key carries that time to live', async () => {
    const redis = new Redis(inject('redisUrl'))
    clients.push(redis)
    const id = `ttl-${Date.now().toString(36)}`
    await new RedisAdminSessions(redis).revoke(id, 60_000)
    const ttl = await redis.pttl(adminSessionKey(id))
    expect(ttl).toBeGreaterThan(50_000)
    expect(ttl).toBeLessThanOrEqual(60_000)
  })
})
