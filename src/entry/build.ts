// Builds the edge's concrete parts from a Config: Redis or the embedded store, tokens, origin.
// Entry points and tests call this; nothing else picks adapters.

import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import type { Context } from 'hono'
import type { Redis } from 'ioredis'
import { MemoryAdminSessions } from '../adapters/memory/admin-sessions.js'
import { MemoryAuditLog } from '../adapters/memory/audit-log.js'
import { MemoryQueueStore } from '../adapters/memory/queue-store.js'
import { MemorySettingsStore } from '../adapters/memory/settings-store.js'
import { nodeMac } from '../adapters/node/mac.js'
import { RedisAdminSessions } from '../adapters/redis/admin-sessions.js'
import { RedisAuditLog } from '../adapters/redis/audit-log.js'
import { connectRedis, whenReady } from '../adapters/redis/connect.js'
import { luaFromFiles } from '../adapters/redis/lua-files.js'
import { RedisQueueStore } from '../adapters/redis/queue-store.js'
import { RedisSettingsStore } from '../adapters/redis/settings-store.js'
import { UndiciOrigin } from '../adapters/undici/origin.js'
import type { Config } from '../config/index.js'
import type { createEdgeApp, EdgeDeps } from '../http/app.js'
import type { AdminSessions } from '../ports/admin-sessions.js'
import type { AuditLog } from '../ports/audit-log.js'
import type { Clock } from '../ports/clock.js'
import type { QueueStore } from '../ports/queue-store.js'
import type { SettingsStore } from '../ports/settings-store.js'
import { assembleEdge } from './assemble.js'

export interface Edge {
  app: ReturnType<typeof createEdgeApp>
  deps: EdgeDeps
  redis: Redis | undefined
  close(): Promise<void>
}

/** The admin UI's files, read once. */
function adminAssets() {
  const read = (file: string) => readFileSync(new URL(`../../admin/ui/${file}`, import.meta.url), 'utf8')
  return { html: read('index.html'), js: read('app.js'), css: read('style.css') }
}

/** The Node socket behind a request served by @hono/node-server. */
function nodeSocket(c: Context): { remoteAddress?: string; encrypted?: boolean } | undefined {
  return (c.env as { incoming?: { socket?: { remoteAddress?: string; encrypted?: boolean } } } | undefined)?.incoming?.socket
}

export async function buildEdge(config: Config, options: { originUrl: string; clock?: Clock; log?: EdgeDeps['log'] }): Promise<Edge> {
  let queue: QueueStore
  let settings: SettingsStore
  let audit: AuditLog
  let adminSessions: AdminSessions
  let redis: Redis | undefined
  if (config.redisUrl) {
    redis = connectRedis(config.redisUrl, (err) => options.log?.('redis_error', { message: err.message }))
    queue = new RedisQueueStore(redis, luaFromFiles())
    settings = new RedisSettingsStore(redis, luaFromFiles())
    audit = new RedisAuditLog(redis)
    adminSessions = new RedisAdminSessions(redis)
    // If Redis is down at start, the edge starts anyway and each room's onStoreError applies.
    if (!(await whenReady(redis, 3000))) options.log?.('redis_unavailable_at_start', {})
  } else {
    queue = new MemoryQueueStore(options.clock ? () => options.clock?.now() ?? Date.now() : Date.now)
    settings = new MemorySettingsStore()
    audit = new MemoryAuditLog()
    adminSessions = new MemoryAdminSessions(options.clock ? () => options.clock?.now() ?? Date.now() : Date.now)
  }
  const origin = new UndiciOrigin({ url: options.originUrl })
  const { app, deps, rooms } = await assembleEdge({
    config,
    queue,
    settings,
    audit,
    adminSessions,
    origin,
    mac: nodeMac(config.queueSecret),
    adminAssets: adminAssets(),
    clock: options.clock,
    log: options.log,
    clientIp: (c) => nodeSocket(c)?.remoteAddress,
    scheme: (c) => (nodeSocket(c)?.encrypted ? 'https' : 'http'),
    lastReport: async () => {
      try {
        return await readFile(config.simReportPath, 'utf8')
      } catch {
        return undefined
      }
    },
  })
  // Every edge samples each room once per 10 s for the admin chart; the store keeps one per bucket.
  const sampler =
    config.historySampleSeconds > 0
      ? setInterval(() => {
          for (const room of rooms.rooms()) void queue.recordSample(room.id, options.clock?.now()).catch(() => {})
        }, config.historySampleSeconds * 1000)
      : undefined
  sampler?.unref()
  return {
    app,
    deps,
    redis,
    async close() {
      clearInterval(sampler)
      await origin.close()
      await queue.close()
    },
  }
}
