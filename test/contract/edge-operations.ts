// What an operator reads of an edge, on each runtime (test/edge.test.ts on Node, test/worker.test.ts
// in workerd): the liveness and readiness probes, with the store stopped and started again, and the
// Prometheus metrics, read with a real parser, under the same names and types on both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemorySettingsStore } from '../../src/adapters/memory/settings-store.js'
import { GuardMeters } from '../../src/http/guard-metrics.js'
import { EdgeMeters } from '../../src/http/metrics.js'
import { RoomDirectory } from '../../src/rooms/directory.js'
import { type OriginServer, startOrigin } from '../support/origin-server.js'
import { Scrape } from '../support/prometheus.js'
import { type RedisServer, startRedis } from '../support/redis-server.js'
import type { EdgeRuntime, RequestTarget, StartOptions, TestEdge } from '../support/runtimes.js'
import { Visitor } from '../support/visitor.js'

const ADMIN_TOKEN = 'operations-admin-token-0123456789'
const METRICS_TOKEN = 'operations-metrics-token-012345'

const room = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  totalActiveUsers: 1,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 120,
  refreshSeconds: 5,
  ...over,
})

/** The edge's metric families and their types, as src/http/metrics.ts declares them (the parser's upper-case names). */
function declaredFamilies(): Map<string, string> {
  const meters = new EdgeMeters()
  meters.watch(new RoomDirectory(new MemorySettingsStore(), []))
  // The bypass rules' and the human check's families, in the same registry (src/http/guard-metrics.ts).
  new GuardMeters(meters.registry)
  return new Map(meters.registry.all().map((f) => [f.name, f.type.toUpperCase()]))
}

async function json(app: RequestTarget, path: string, headers: Record<string, string> = {}) {
  const res = await app.request(`http://shop.test${path}`, { headers })
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> }
}

/** Waits for a real server event (Redis stopping or coming back); no assertion depends on the time it takes. */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error('condition not reached')
}

export function edgeOperationsContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  let redis: RedisServer
  const edges: TestEdge[] = []
  beforeAll(async () => {
    origin = await startOrigin()
    redis = await startRedis()
  })
  afterAll(async () => {
    for (const e of edges) await e.close()
    await origin.close()
    await redis.stop()
  })

  async function edgeWith(rooms: Record<string, unknown>[], o: Partial<StartOptions> = {}) {
    const edge = await runtime.start({
      rooms,
      originUrl: origin.url,
      adminTokens: `ops:${ADMIN_TOKEN}`,
      env: { ANTEROOM_METRICS_TOKEN: METRICS_TOKEN, ANTEROOM_METRICS_TIME_EVERY: '1' },
      ...o,
    })
    edges.push(edge)
    return edge
  }

  describe(`probes (${runtime.name})`, () => {
    it('live answers while the process does; ready follows the store: 503 naming it while Redis is stopped, 200 once it is back', async () => {
      const { app, clock } = await edgeWith([room()], { redisUrl: redis.url })
      const live = await json(app, '/_anteroom/live')
      expect(live).toMatchObject({ status: 200, body: { live: true } })
      expect(live.headers.get('cache-control')).toBe('no-store')
      expect(await json(app, '/_anteroom/ready')).toMatchObject({
        status: 200,
        body: { ready: true, checks: { store: 'up', rooms: 'loaded', keys: 'loaded' } },
      })

      await redis.stop()
      await waitFor(async () => (await json(app, '/_anteroom/ready')).status === 503)
      expect(await json(app, '/_anteroom/ready')).toMatchObject({
        status: 503,
        body: { ready: false, checks: { store: 'down', rooms: 'loaded', keys: 'loaded' } },
      })
      // Liveness asks no store: the process is fine, a restart would not help.
      expect(await json(app, '/_anteroom/live')).toMatchObject({ status: 200, body: { live: true } })
      await clock.advance(2000)
      expect((await new Visitor().status(app, 'sale')).state).toBe('busy')

      redis = await startRedis([], redis.port)
      await waitFor(async () => (await json(app, '/_anteroom/ready')).status === 200)
      expect(await json(app, '/_anteroom/ready')).toMatchObject({ status: 200, body: { ready: true, checks: { store: 'up' } } })
    })
  })

  describe(`metrics (${runtime.name})`, () => {
    it('the declared families under their names and types, with the visits counted; never without a token', async () => {
      const { app, clock, settled } = await edgeWith([room()])
      const first = new Visitor('http://shop.test', '203.0.113.1')
      const second = new Visitor('http://shop.test', '203.0.113.2')
      expect((await first.status(app, 'sale')).state).toBe('admitted')
      expect((await second.status(app, 'sale')).state).toBe('queued')
      expect((await second.status(app, 'sale')).state).toBe('queued')
      await clock.advance(1001)
      await second.status(app, 'sale')
      await settled()

      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer not-the-token-0123456789abc' },
        { cookie: first.cookieHeader() },
      ]
      for (const headers of attempts) {
        const refused = await app.request('http://shop.test/_anteroom/metrics', { headers })
        expect(refused.status).toBe(401)
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('ERR_UNAUTHORIZED')
      }
      for (const token of [METRICS_TOKEN, ADMIN_TOKEN]) {
        const res = await app.request('http://shop.test/_anteroom/metrics', { headers: { authorization: `Bearer ${token}` } })
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
        const m = new Scrape(await res.text())
        expect(m.anteroomTypes()).toEqual(declaredFamilies())
        expect(m.value('anteroom_visits_total', { room: 'sale', outcome: 'admit' })).toBe(1)
        expect(m.value('anteroom_visits_total', { room: 'sale', outcome: 'wait' })).toBe(3)
        expect(m.histogram('anteroom_poll_duration_seconds', { room: 'sale' })?.count).toBe(4)
        expect(m.histogram('anteroom_queue_wait_seconds', { room: 'sale' })?.count).toBe(1)
        expect(m.value('anteroom_room_waiting', { room: 'sale' })).toBe(1)
        expect(m.value('anteroom_room_active', { room: 'sale' })).toBe(1)
        expect(m.value('anteroom_room_admitted_total', { room: 'sale' })).toBe(1)
        expect(m.value('anteroom_store_up')).toBe(1)
      }
    })
  })
}
