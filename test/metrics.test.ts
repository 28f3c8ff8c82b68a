// Prometheus metrics, read with a real parser: the edge's on a real Redis after a sale run on a manual
// clock (every number checked against what the sale did), who may read them, the store's failures and
// a recovering room as they show, prom-client's writing against the Worker's (the same families, the
// same values), and the booking origin's on a real PostgreSQL server.
import { Redis } from 'ioredis'
import { createLocalJWKSet } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import { meteredDb } from '../src/adapters/postgres/metered.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { promExporter } from '../src/adapters/prom/exporter.js'
import { createBookingApp } from '../src/booking/app.js'
import { BookingGate } from '../src/booking/gate.js'
import { BookingMeters } from '../src/booking/metrics.js'
import { Reconciler } from '../src/booking/reconciler.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import { textExporter } from '../src/core/metrics.js'
import type { Edge } from '../src/entry/build.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { Scrape } from './support/prometheus.js'
import { type RedisServer, startRedis } from './support/redis-server.js'
import { freshDb, type RequestTarget, T0, withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const METRICS_TOKEN = 'metrics-token-0123456789abcdef'
const ADMIN_TOKEN = 'admin-token-0123456789abcdefgh'

let origin: OriginServer
const edges: Edge[] = []
beforeAll(async () => {
  origin = await startOrigin((_req, res) => {
    res.setHeader('content-type', 'text/plain')
    res.end('origin')
  })
})
afterAll(async () => {
  for (const e of edges) await e.close()
  await origin.close()
})

const room = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  totalActiveUsers: 3,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 120,
  refreshSeconds: 5,
  abandonAfterSeconds: 60,
  ...over,
})

async function edgeOn(redisUrl: string | undefined, rooms: Record<string, unknown>[], env: Record<string, string> = {}) {
  const clock = new ManualClock(T0)
  const edge = await testEdge({
    rooms,
    originUrl: origin.url,
    redisUrl,
    clock,
    adminTokens: `ops:${ADMIN_TOKEN}`,
    // Every visit timed, so that the histograms' counts are the visits'; the default (16) is tested below.
    env: { ANTEROOM_METRICS_TOKEN: METRICS_TOKEN, ANTEROOM_METRICS_TIME_EVERY: '1', ...env },
  })
  edges.push(edge)
  return { edge, clock, app: withSocketAddress(edge.app) }
}

async function scrape(app: RequestTarget, token = METRICS_TOKEN): Promise<Scrape> {
  const res = await app.request('http://shop.test/_anteroom/metrics', { headers: { authorization: `Bearer ${token}` } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  return new Scrape(await res.text())
}

/** Lets the edge take its once-a-second look at the rooms, and waits for it. */
async function look(edge: Edge, clock: ManualClock) {
  clock.advance(1001)
  edge.deps.rooms.rooms()
  await edge.deps.rooms.settled()
}

describe('the edge on Node and Redis', () => {
  it('a sale, scraped: visits by outcome, time in queue, the line and the sessions as the store has them', async () => {
    const url = `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
    const { edge, clock, app } = await edgeOn(url, [room()])
    const arrivals = new Map<Visitor, number>()
    const admittedAt = new Map<Visitor, number>()
    const visitors = Array.from({ length: 8 }, (_, i) => new Visitor('http://shop.test', `203.0.113.${i + 1}`))
    let waits = 0
    // Arrivals 250 ms apart, then everyone polls every second: the cap (3) and the pace (1 a second) decide.
    for (const v of visitors) {
      arrivals.set(v, clock.now())
      const s = await v.status(app, 'sale')
      if (s.state === 'admitted') admittedAt.set(v, clock.now())
      else waits++
      clock.advance(250)
    }
    for (let second = 0; second < 6; second++) {
      clock.advance(1000)
      for (const v of visitors) {
        if (admittedAt.has(v)) continue
        const s = await v.status(app, 'sale')
        if (s.state === 'admitted') admittedAt.set(v, clock.now())
        else waits++
      }
    }
    expect(admittedAt.size).toBe(3)
    await look(edge, clock)
    const m = await scrape(app)
    const stats = await edge.deps.queue.stats('sale', clock.now())

    expect(m.value('anteroom_visits_total', { room: 'sale', outcome: 'admit' })).toBe(admittedAt.size)
    expect(m.value('anteroom_visits_total', { room: 'sale', outcome: 'wait' })).toBe(waits)
    expect(m.value('anteroom_visits_total', { room: 'sale', outcome: 'open' })).toBe(0)
    const wait = m.histogram('anteroom_queue_wait_seconds', { room: 'sale' })
    const expected = [...admittedAt].reduce((sum, [v, at]) => sum + (at - (arrivals.get(v) as number)) / 1000, 0)
    expect(wait?.count).toBe(admittedAt.size)
    expect(wait?.sum).toBeCloseTo(expected, 2)
    // Cumulative buckets: everyone admitted within 5 s of arriving is in the first.
    const within5 = [...admittedAt].filter(([v, at]) => at - (arrivals.get(v) as number) <= 5000).length
    expect(wait?.buckets.get('5')).toBe(within5)
    expect(wait?.buckets.get('+Inf')).toBe(admittedAt.size)
    const polls = m.histogram('anteroom_poll_duration_seconds', { room: 'sale' })
    expect(polls?.count).toBe(waits + admittedAt.size)
    expect(m.histogram('anteroom_store_call_duration_seconds', { call: 'poll' })?.count).toBe(waits + admittedAt.size)
    expect(m.value('anteroom_store_errors_total', { call: 'poll' })).toBe(0)

    // The room's numbers are the store's.
    expect(m.value('anteroom_room_waiting', { room: 'sale' })).toBe(stats.waiting)
    expect(m.value('anteroom_room_waiting', { room: 'sale' })).toBe(visitors.length - admittedAt.size)
    expect(m.value('anteroom_room_active', { room: 'sale' })).toBe(stats.active)
    expect(m.value('anteroom_room_admitted_total', { room: 'sale' })).toBe(admittedAt.size)
    expect(m.value('anteroom_room_abandoned_total', { room: 'sale' })).toBe(0)
    expect(m.value('anteroom_room_recovering', { room: 'sale' })).toBe(0)
    expect(m.value('anteroom_room_mode', { room: 'sale', mode: 'fifo' })).toBe(1)
    expect(m.value('anteroom_room_mode', { room: 'sale', mode: 'paused' })).toBe(0)
    expect(m.value('anteroom_room_limit_active_users', { room: 'sale' })).toBe(3)
    expect(m.value('anteroom_room_limit_new_users_per_minute', { room: 'sale' })).toBe(60)
    // The room is full: the back of the line waits for sessions to end (120 s), so more than a minute.
    expect(m.value('anteroom_room_back_of_line_wait_seconds', { room: 'sale' })).toBeGreaterThan(60)
    expect(m.value('anteroom_store_up')).toBe(1)
    expect(m.family('anteroom_room_waiting').type).toBe('GAUGE')
    expect(m.family('anteroom_visits_total').type).toBe('COUNTER')
    expect(m.family('anteroom_poll_duration_seconds').type).toBe('HISTOGRAM')
    // prom-client's process metrics, on Node.
    expect(m.value('process_cpu_user_seconds_total')).toBeGreaterThan(0)
    expect(m.families.has('nodejs_eventloop_lag_seconds')).toBe(true)

    // Visitors leave: after abandonAfterSeconds without a poll, the next poll drops them, and the total shows it.
    clock.advance(61_000)
    const late = new Visitor('http://shop.test', '198.51.100.9')
    await late.status(app, 'sale')
    await look(edge, clock)
    const after = await scrape(app)
    expect(after.value('anteroom_room_abandoned_total', { room: 'sale' })).toBe(visitors.length - admittedAt.size)
    expect(after.value('anteroom_room_waiting', { room: 'sale' })).toBe(1)
  })

  it('by default every visit is counted and one in 16 is timed', async () => {
    const { app } = await edgeOn(undefined, [room({ mode: 'paused' })], { ANTEROOM_METRICS_TIME_EVERY: '' })
    const v = new Visitor()
    for (let i = 0; i < 40; i++) expect((await v.status(app, 'sale')).state).toBe('paused')
    const m = await scrape(app)
    expect(m.value('anteroom_visits_total', { room: 'sale', outcome: 'wait' })).toBe(40)
    expect(m.histogram('anteroom_poll_duration_seconds', { room: 'sale' })?.count).toBe(2)
    expect(m.histogram('anteroom_store_call_duration_seconds', { call: 'poll' })?.count).toBe(2)
  })

  it('reads only for the metrics token or an admin token: never for a visitor', async () => {
    const { app } = await edgeOn(undefined, [room()])
    const visitor = new Visitor()
    await visitor.status(app, 'sale')
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token-0123456789abcdefgh' },
      { authorization: `Basic ${btoa(`ops:${ADMIN_TOKEN}`)}` },
      { authorization: `Bearer ${METRICS_TOKEN}x` },
      { cookie: visitor.cookieHeader() },
    ]
    for (const headers of attempts) {
      const res = await app.request('http://shop.test/_anteroom/metrics', { headers })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="anteroom-metrics"')
      const body = (await res.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('ERR_UNAUTHORIZED')
      expect(body.error.message).toContain('ANTEROOM_METRICS_TOKEN')
    }
    await scrape(app, METRICS_TOKEN)
    await scrape(app, ADMIN_TOKEN)
    // In any spelling the edge's own path stays the edge's: never the origin's.
    const other = await app.request('http://shop.test/_ANTEROOM/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    expect(other.status).toBe(404)
    expect(origin.requests.some((r) => r.url.toLowerCase().includes('metrics'))).toBe(false)
  })

  it('ANTEROOM_METRICS=off: no endpoint, and visits still served', async () => {
    const { edge, app } = await edgeOn(undefined, [room()], { ANTEROOM_METRICS: 'off' })
    expect(edge.deps.meters).toBeUndefined()
    const res = await app.request('http://shop.test/_anteroom/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('ANTEROOM_METRICS=off')
    expect((await new Visitor().status(app, 'sale')).state).toBe('admitted')
  })

  it('refused joins by reason, and challenges, as the bot defences count them', async () => {
    const { app } = await edgeOn(undefined, [
      room({ id: 'capped', paths: ['/capped'], joinsPerNetworkPerMinute: 1 }),
      room({ id: 'work', paths: ['/work'], powDifficulty: 4 }),
    ])
    expect((await new Visitor('http://shop.test', '203.0.113.1').status(app, 'capped')).state).toBe('admitted')
    for (let i = 0; i < 3; i++) {
      const res = await new Visitor('http://shop.test', '203.0.113.2').request(app, '/_anteroom/status?room=capped', { json: true })
      expect(res.status).toBe(429)
    }
    expect((await new Visitor().status(app, 'work')).state).toBe('challenge')
    const bad = await new Visitor().request(app, '/_anteroom/status?room=work', { json: true, headers: { 'anteroom-pow': 'nonsense' } })
    expect(bad.status).toBe(400)
    const m = await scrape(app)
    expect(m.value('anteroom_joins_refused_total', { room: 'capped', reason: 'network' })).toBe(3)
    expect(m.value('anteroom_joins_refused_total', { room: 'capped', reason: 'pow' })).toBe(0)
    expect(m.value('anteroom_joins_refused_total', { room: 'work', reason: 'pow' })).toBe(2)
    expect(m.value('anteroom_visits_total', { room: 'work', outcome: 'challenge' })).toBe(2)
    expect(m.histogram('anteroom_store_call_duration_seconds', { call: 'join' })?.count).toBe(4)
  })

  it('a store that goes away: poll errors counted, the store down; a store that forgot the room: recovering', async () => {
    let redis: RedisServer = await startRedis()
    try {
      const { edge, clock, app } = await edgeOn(redis.url, [room({ totalActiveUsers: 1, onStoreError: 'closed' })])
      const v = new Visitor()
      const w = new Visitor('http://shop.test', '203.0.113.99')
      await v.status(app, 'sale')
      await w.status(app, 'sale')
      // The store forgets everything (a restart without persistence): the next poll with a token finds no life.
      const admin = new Redis(redis.url)
      await admin.flushall()
      admin.disconnect()
      clock.advance(1000)
      expect((await w.status(app, 'sale')).state).toBe('recovering')
      await look(edge, clock)
      const m = await scrape(app)
      expect(m.value('anteroom_room_recovering', { room: 'sale' })).toBe(1)

      const port = redis.port
      await redis.stop()
      clock.advance(1000)
      expect((await w.status(app, 'sale')).state).toBe('busy')
      await look(edge, clock)
      const down = await scrape(app)
      expect(down.value('anteroom_store_errors_total', { call: 'poll' })).toBe(1)
      expect(down.value('anteroom_store_errors_total', { call: 'watch' })).toBeGreaterThanOrEqual(1)
      expect(down.value('anteroom_store_up')).toBe(0)

      redis = await startRedis([], port)
      for (let i = 0; i < 50 && (await scrape(app)).value('anteroom_store_up') !== 1; i++) {
        await new Promise((r) => setTimeout(r, 100))
        await look(edge, clock)
      }
      expect((await scrape(app)).value('anteroom_store_up')).toBe(1)
    } finally {
      await redis.stop()
    }
  })

  it("prom-client's text and the Worker's (core/metrics.ts formatText) carry the same families and values", async () => {
    const { edge, clock, app } = await edgeOn(undefined, [room(), room({ id: 'other', paths: ['/other'] })])
    for (let i = 0; i < 5; i++) await new Visitor('http://shop.test', `203.0.113.${i + 1}`).status(app, i % 2 ? 'sale' : 'other')
    await look(edge, clock)
    const registry = edge.deps.meters?.registry
    if (registry === undefined) throw new Error('metrics are on by default')
    const node = new Scrape(await promExporter(registry, { processMetrics: false }).text())
    const worker = new Scrape(await textExporter(registry).text())
    expect(node.anteroomTypes()).toEqual(worker.anteroomTypes())
    expect(node.anteroomTypes().size).toBeGreaterThan(15)
    for (const [name, family] of node.families) {
      const other = worker.family(name)
      expect(other.help).toBe(family.help)
      expect(other.metrics).toEqual(family.metrics)
    }
  })
})

describe('the booking origin on PostgreSQL', () => {
  it('holds and confirms by outcome, statement latency by SQL file, the gate refusals', async () => {
    const meters = new BookingMeters()
    const db = meteredDb(postgresDb(inject('postgresUrl'), { max: 4 }), (name, s, ok) => meters.statement(name, s, ok))
    try {
      await migrate(db)
      const event = `metrics${Date.now().toString(36)}`
      await seedEvent(db, {
        id: event,
        name: 'Metrics night',
        room: 'sale',
        priceCents: 1000,
        rows: ['A'],
        seatsPerRow: 4,
        holdSeconds: 600,
      })
      const keys = await importSigningKeys([await generateSigningJwk('edge-m')])
      const tokens = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
      const store = new PostgresSeatStore(db)
      const claimGate = new MemoryClaimGate()
      const gate = new BookingGate(claimGate, store)
      const reconciler = new Reconciler({ gate: claimGate, store, events: async () => [event], periodMs: 60_000, graceMs: 0 })
      await reconciler.run()
      meters.watch(gate, reconciler)
      const payments = new TestPaymentProvider()
      const app = createBookingApp({
        seats: store,
        payments,
        gate,
        reconciler,
        admission: { jwksUrl: 'http://127.0.0.1:1/jwks', issuer: 'anteroom', audience: 'origin', keys: createLocalJWKSet(tokens.jwks()) },
        meters,
        metrics: { exporter: promExporter(meters.registry, { processMetrics: false }), tokens: [METRICS_TOKEN] },
      })
      const token = (who: string) =>
        tokens.sign({ sub: who, jti: `s-${who}`, room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 }, Date.now())
      const call = async (method: string, path: string, who: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await app.request(path, {
          method,
          headers: { 'anteroom-admission': await token(who), 'content-type': 'application/json', ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: res.status, body: (await res.json()) as { hold?: { id: string } } }
      }
      const held = await call('POST', `/events/${event}/holds`, 'ann', { seats: ['A1', 'A2'] })
      expect(held.status).toBe(201)
      // The gate knows A1 is gone: 409 without the database.
      expect((await call('POST', `/events/${event}/holds`, 'bob', { seats: ['A1'] })).status).toBe(409)
      expect((await call('POST', `/events/${event}/holds`, 'bob', { seats: ['Z9'] })).status).toBe(400)
      expect(
        (await call('POST', `/holds/${held.body.hold?.id}/confirm`, 'ann', undefined, { 'idempotency-key': 'metrics-key-1' })).status,
      ).toBe(200)
      expect(
        (await call('POST', `/holds/${held.body.hold?.id}/confirm`, 'ann', undefined, { 'idempotency-key': 'metrics-key-1' })).status,
      ).toBe(200)

      expect((await app.request('/metrics')).status).toBe(401)
      const res = await app.request('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
      expect(res.status).toBe(200)
      const m = new Scrape(await res.text())
      expect(m.value('anteroom_origin_holds_total', { event, outcome: 'held' })).toBe(1)
      expect(m.value('anteroom_origin_holds_total', { event, outcome: 'gate' })).toBe(1)
      expect(m.value('anteroom_origin_holds_total', { event, outcome: 'unknown_seats' })).toBe(1)
      expect(m.value('anteroom_origin_confirms_total', { outcome: 'booked' })).toBe(2)
      expect(m.value('anteroom_origin_gate_refusals_total')).toBe(1)
      expect(m.value('anteroom_origin_gate_repairs_total')).toBe(0)
      expect(m.histogram('anteroom_origin_db_statement_duration_seconds', { statement: 'hold' })?.count).toBe(2)
      expect(m.histogram('anteroom_origin_db_statement_duration_seconds', { statement: 'book-seats' })?.count).toBe(1)
      expect(m.family('anteroom_origin_db_statement_duration_seconds').type).toBe('HISTOGRAM')
    } finally {
      await db.close()
    }
  })
})
