// Builds the edge's concrete parts from a Config: Redis or the embedded store, tokens, origin.
// Entry points and tests call this; nothing else picks adapters.

import { readdirSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import type { Context } from 'hono'
import { ADMIN_MODULE } from '../../admin/inputs.js'
import type { AdminAssets } from '../../admin/routes.js'
import { jsMac } from '../adapters/js/mac.js'
import { memoryStores } from '../adapters/memory/stores.js'
import { nodeDigest } from '../adapters/node/digest.js'
import { nodeVisitorHeaders } from '../adapters/node/headers.js'
import { nodeResolver } from '../adapters/node/resolver.js'
import { keepTickShapes } from '../adapters/node/tick-shapes.js'
import { promExporter } from '../adapters/prom/exporter.js'
import { connectRedis, type RedisClient, whenReady } from '../adapters/redis/connect.js'
import { luaScripts } from '../adapters/redis/scripts.js'
import { redisStores } from '../adapters/redis/stores.js'
import { UndiciOrigin } from '../adapters/undici/origin.js'
import type { Config } from '../config/index.js'
import { STALL_TICK_MS } from '../core/lateness.js'
import type { AnalyticsSampler } from '../http/analytics.js'
import type { createEdgeApp, EdgeDeps } from '../http/app.js'
import type { ClaimGate } from '../ports/claim-gate.js'
import type { Clock } from '../ports/clock.js'
import type { Stores } from '../ports/stores.js'
import { assembleEdge } from './assemble.js'

export interface Edge {
  app: ReturnType<typeof createEdgeApp>
  deps: EdgeDeps
  /** One server's connection (plain or found through Sentinel) or a Cluster; undefined on the embedded store. */
  redis: RedisClient | undefined
  /** The claim gate whose counts the edge reads (a room's `event`): the origin keeps it. */
  gate: ClaimGate
  /** Records each room's minute for the analytics (at minute starts; tests call sample() as the timer does). */
  analytics: AnalyticsSampler
  close(): Promise<void>
}

/** The admin UI's files, read once: the page, the style sheet, and every ES module in admin/ui/. */
function adminAssets(): AdminAssets {
  const dir = new URL('../../admin/ui/', import.meta.url)
  const read = (file: string) => readFileSync(new URL(file, dir), 'utf8')
  const modules = Object.fromEntries(
    readdirSync(dir)
      .filter((f) => ADMIN_MODULE.test(f))
      .map((f) => [f, read(f)]),
  )
  return { html: read('index.html'), css: read('style.css'), modules }
}

/** The Node socket behind a request served by @hono/node-server. */
function nodeSocket(c: Context): { remoteAddress?: string; encrypted?: boolean } | undefined {
  return (c.env as { incoming?: { socket?: { remoteAddress?: string; encrypted?: boolean } } } | undefined)?.incoming?.socket
}

export async function buildEdge(
  config: Config,
  options: {
    originUrl: string
    clock?: Clock
    log?: EdgeDeps['log']
    /**
     * On the embedded store, the claim gate to read (npm start shares one with the booking origin in
     * the same process); on Redis the edge reads the gate's keys there, as the origin writes them.
     */
    gate?: ClaimGate
  },
): Promise<Edge> {
  // Node's next-tick objects stay on V8's fast path however long the process runs (tick-shapes.ts).
  keepTickShapes()
  const now = options.clock ? () => options.clock?.now() ?? Date.now() : Date.now
  let stores: Stores
  let redis: RedisClient | undefined
  if (config.redisUrl) {
    // One server, a Sentinel set or a Cluster, by the URL's scheme; the stores run the same on each.
    redis = connectRedis(config.redisUrl, (err) => options.log?.('redis_error', { message: err.message }))
    stores = redisStores(redis, luaScripts())
    // If Redis is down at start, the edge starts anyway and each room's onStoreError applies.
    if (!(await whenReady(redis, 3000))) options.log?.('redis_unavailable_at_start', {})
  } else {
    stores = memoryStores(now, options.gate)
  }
  const origin = new UndiciOrigin({ url: options.originUrl })
  const { app, deps, rooms, analytics } = await assembleEdge({
    config,
    ...stores,
    origin,
    mac: jsMac(config.queueSecret),
    digest: nodeDigest,
    adminAssets: adminAssets(),
    clock: options.clock,
    log: options.log,
    clientIp: (c) => nodeSocket(c)?.remoteAddress,
    scheme: (c) => (nodeSocket(c)?.encrypted ? 'https' : 'http'),
    readHeaders: nodeVisitorHeaders,
    // Crawler checks ask node:dns, at ANTEROOM_DNS_SERVER when set.
    resolver: nodeResolver({ server: config.dnsServer }),
    exporter: promExporter,
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
          for (const room of rooms.rooms()) void stores.queue.recordSample(room.id, options.clock?.now()).catch(() => {})
        }, config.historySampleSeconds * 1000)
      : undefined
  sampler?.unref()
  // An edge that goes quiet still sends the refusals it counted, and records its rooms' minutes for the
  // analytics when one begins (the reload does both while requests come).
  const flusher = setInterval(() => {
    void deps.refusals.flush()
    void analytics.sample()
  }, 1000)
  flusher.unref()
  // Node ticks the edge's watch for stalls of its own event loop (core/lateness.ts Stalls); not under a
  // test's manual clock, whose time moves only when a test says.
  const stallTicker = options.clock === undefined ? setInterval(() => rooms.tickStalls(), STALL_TICK_MS) : undefined
  stallTicker?.unref()
  return {
    app,
    deps,
    redis,
    gate: stores.gate,
    analytics,
    async close() {
      clearInterval(sampler)
      clearInterval(flusher)
      clearInterval(stallTicker)
      await origin.close()
      await stores.queue.close()
    },
  }
}
