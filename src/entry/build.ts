// Builds the edge's concrete parts from a Config: Redis or the embedded store, tokens, origin.
// Entry points and tests call this; nothing else picks adapters.

import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import type { Context } from 'hono'
import type { Redis } from 'ioredis'
import { AdminAuth } from '../../admin/auth.js'
import { createAdminRoutes } from '../../admin/routes.js'
import { MemoryAuditLog } from '../adapters/memory/audit-log.js'
import { MemoryQueueStore } from '../adapters/memory/queue-store.js'
import { MemorySettingsStore } from '../adapters/memory/settings-store.js'
import { nodeMac } from '../adapters/node/mac.js'
import { RedisAuditLog } from '../adapters/redis/audit-log.js'
import { connectRedis } from '../adapters/redis/connect.js'
import { RedisQueueStore } from '../adapters/redis/queue-store.js'
import { RedisSettingsStore } from '../adapters/redis/settings-store.js'
import { UndiciOrigin } from '../adapters/undici/origin.js'
import type { Config } from '../config/index.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../core/admission-token.js'
import { QueueTokens } from '../core/queue-token.js'
import { createEdgeApp, type EdgeDeps } from '../http/app.js'
import { RoomDirectory } from '../http/room-directory.js'
import type { AuditLog } from '../ports/audit-log.js'
import type { Clock } from '../ports/clock.js'
import type { QueueStore } from '../ports/queue-store.js'
import type { SettingsStore } from '../ports/settings-store.js'

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

/** Waits for the first connection; if Redis is down at start, the edge starts anyway and each room's onStoreError applies. */
async function waitUntilReady(redis: Redis, log: EdgeDeps['log']): Promise<void> {
  if (redis.status === 'ready') return
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 3000)
    redis.once('ready', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
  if (!ready) log?.('redis_unavailable_at_start', {})
}

export async function buildEdge(config: Config, options: { originUrl: string; clock?: Clock; log?: EdgeDeps['log'] }): Promise<Edge> {
  let queue: QueueStore
  let settings: SettingsStore
  let audit: AuditLog
  let redis: Redis | undefined
  if (config.redisUrl) {
    redis = connectRedis(config.redisUrl, (err) => options.log?.('redis_error', { message: err.message }))
    queue = new RedisQueueStore(redis)
    settings = new RedisSettingsStore(redis)
    audit = new RedisAuditLog(redis)
  } else {
    queue = new MemoryQueueStore(options.clock ? () => options.clock?.now() ?? Date.now() : Date.now)
    settings = new MemorySettingsStore()
    audit = new MemoryAuditLog()
  }
  if (redis !== undefined) await waitUntilReady(redis, options.log)
  const rooms = new RoomDirectory(settings, config.rooms, 1000, options.clock ? () => options.clock?.now() ?? Date.now() : Date.now)
  await rooms.start()
  const keys = await importSigningKeys(config.signingKeys ?? [await generateSigningJwk(`dev-${Date.now().toString(36)}`)])
  const origin = new UndiciOrigin({ url: options.originUrl })
  const mac = nodeMac(config.queueSecret)
  const admin = createAdminRoutes({
    auth: new AdminAuth(config.adminUsers, mac),
    settings,
    queue,
    audit,
    rooms,
    assets: adminAssets(),
    clock: options.clock,
    secure: (c) => config.secureCookies || nodeSocket(c)?.encrypted === true,
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
  const deps: EdgeDeps = {
    queue,
    rooms,
    queueTokens: new QueueTokens(mac),
    admissionTokens: new AdmissionTokens({ keys, issuer: config.issuer, audience: config.audience }),
    origin,
    clock: options.clock,
    secureCookies: config.secureCookies,
    clientIp: (c) => nodeSocket(c)?.remoteAddress,
    scheme: (c) => (nodeSocket(c)?.encrypted ? 'https' : 'http'),
    log: options.log,
    admin,
  }
  return {
    app: createEdgeApp(deps),
    deps,
    redis,
    async close() {
      clearInterval(sampler)
      await origin.close()
      await queue.close()
    },
  }
}
