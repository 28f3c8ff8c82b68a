import { Redis } from 'ioredis'
import { afterAll, inject } from 'vitest'
import { MemoryAuditLog } from '../src/adapters/memory/audit-log.js'
import { MemorySettingsStore } from '../src/adapters/memory/settings-store.js'
import { RedisAuditLog } from '../src/adapters/redis/audit-log.js'
import { luaFromFiles } from '../src/adapters/redis/lua-files.js'
import { RedisSettingsStore } from '../src/adapters/redis/settings-store.js'
import { settingsStoreContract } from './contract/settings-store.js'

const clients: Redis[] = []
afterAll(() => {
  for (const c of clients) c.disconnect()
})

settingsStoreContract('memory', async () => ({ settings: new MemorySettingsStore(), audit: new MemoryAuditLog() }))
settingsStoreContract('redis', async () => {
  const redis = new Redis(inject('redisUrl'))
  clients.push(redis)
  return { settings: new RedisSettingsStore(redis, luaFromFiles()), audit: new RedisAuditLog(redis) }
})
