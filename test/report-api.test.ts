// The post-event report over the admin API (GET /_anteroom/api/rooms/:id/report), after a small sale
// run through a real Node edge on a real redis-server with a manual clock: visitors join from seven
// networks (the cap refuses three joins), poll every second, two go silent, one is let in every 10 s,
// the event sells out at 150 s. The edge's sampler records each minute as it begins (the test calls it
// as its timer would); the report's numbers are checked against what the test saw happen.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { connectRedis, type RedisClient, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { QUEUE_WAIT_BUCKETS } from '../src/core/metrics.js'
import type { Report } from '../src/core/report.js'
import type { Edge } from '../src/entry/build.js'
import type { StockSnapshot } from '../src/ports/claim-gate.js'
import { ManualClock } from './support/clock.js'
import { TEST_SECRET, testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freshDb, type RequestTarget, withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'
import { startWorker, WorkerClock } from './support/worker.js'

/** A minute's start. */
const T0 = 1_800_000_000_000
const MIN = 60_000
const ADMIN = 'ops-token-0123456789abcdefghij'
const ROOM = {
  id: 'gig',
  paths: ['/gig'],
  totalActiveUsers: 100,
  newUsersPerMinute: 6,
  refreshSeconds: 10,
  abandonAfterSeconds: 60,
  joinsPerNetworkPerMinute: 5,
  event: 'gig',
}
const seats = (sold: number): StockSnapshot['units'] =>
  Array.from({ length: 40 }, (_, i) => ({ unit: `seat:A${i + 1}`, capacity: 1, sold: i < sold ? 1 : 0 }))

let origin: OriginServer
let edge: Edge
let gateRedis: RedisClient
let app: RequestTarget
const clock = new ManualClock(T0)

/** What the test saw: each visitor's join and admission times (ms), and what each minute's sample should find. */
interface Seen {
  joinAt: number
  admitAt?: number
  silent: boolean
}
const seen = new Map<Visitor, Seen>()
const refused: number[] = []
/** At each minute's start (the sample's time): the visitors in line, as the test counts them. */
const waitingAt = new Map<number, number>()

const admin = (path: string, headers: Record<string, string> = {}) =>
  app.request(`http://shop.test/_anteroom/api${path}`, { headers: { authorization: `Bearer ${ADMIN}`, ...headers } })
const reportOf = async (query: string): Promise<Report> => (await (await admin(`/rooms/gig/report?${query}`)).json()) as Report

/** In line at time t: joined, not admitted, and not dropped for silence (silent for over a minute: swept by others' polls). */
function inLine(t: number): number {
  let n = 0
  for (const s of seen.values()) if (s.admitAt === undefined && !(s.silent && t - s.joinAt > 61_000)) n++
  return n
}

/** One second of the sale: the clock moves; at a minute's start the sampler records first; then the line polls. */
async function second(): Promise<void> {
  clock.advance(1000)
  if (clock.now() % MIN === 0) {
    waitingAt.set(clock.now(), inLine(clock.now()))
    await edge.analytics.sample()
  }
  for (const [v, s] of seen) {
    if (s.silent || s.admitAt !== undefined) continue
    const status = await v.status(app, 'gig')
    if (status.state === 'admitted') s.admitAt = clock.now()
  }
}

beforeAll(async () => {
  origin = await startOrigin()
  const url = `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
  // The origin's side: the event's stock in the claim gate, 30 of 40 seats free when the sale begins.
  gateRedis = connectRedis(url)
  await whenReady(gateRedis, 5000)
  const gate = new RedisClaimGate(gateRedis, luaScripts())
  await gate.reconcile('gig', { units: seats(10), holds: [] }, 0, T0)
  edge = await testEdge({ rooms: [ROOM], originUrl: origin.url, redisUrl: url, clock, adminTokens: `ops:${ADMIN}` })
  app = withSocketAddress(edge.app)
  // The edge's timer records the minute the edge started in (within a second; here at once).
  await edge.analytics.sample()

  // 38 arrive, one a second, from seven networks: the cap refuses the sixth of a network in a minute
  // (three from the first), and the last two go silent after joining.
  waitingAt.set(T0, 0)
  const networks = [0, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 1, 2, 3, 4, 5, 6]
  for (const [i, net] of networks.entries()) {
    await second()
    const v = new Visitor('http://shop.test', `198.51.${100 + net}.${10 + i}`)
    const res = await v.request(app, '/_anteroom/status?room=gig', { json: true })
    if (res.status === 429) {
      refused.push(clock.now())
      continue
    }
    const body = (await res.json()) as { state: string }
    seen.set(v, { joinAt: clock.now(), silent: i >= networks.length - 2, admitAt: body.state === 'admitted' ? clock.now() : undefined })
  }
  // The sale goes on; at 150 s the last seats sell (the origin reconciles the gate), and the edge sees it sold out.
  while (clock.now() < T0 + 150_000) await second()
  await gate.reconcile('gig', { units: seats(40), holds: [] }, 0, clock.now())
  while (clock.now() < T0 + 5 * MIN) await second()
  await edge.deps.rooms.settled()
})

afterAll(async () => {
  await edge?.close()
  gateRedis?.disconnect()
  await origin?.close()
})

describe('the report of a sale', () => {
  it('says what happened: admitted, abandoned, refused, the peak, the sold-out minute, time in queue', async () => {
    const admitted = [...seen.values()].filter((s) => s.admitAt !== undefined)
    const waits = admitted.map((s) => ((s.admitAt as number) - s.joinAt) / 1000).sort((a, b) => a - b)
    // The sale as the test ran it: enough happened for every number to mean something.
    expect(refused).toHaveLength(3)
    expect(seen.size).toBe(35)
    expect([...seen.values()].filter((s) => s.silent)).toHaveLength(2)
    expect(admitted.length).toBeGreaterThanOrEqual(14)
    expect(admitted.every((s) => (s.admitAt as number) < T0 + 152_000)).toBe(true)
    expect(new Set(waits.map((w) => QUEUE_WAIT_BUCKETS.findIndex((b) => w <= b))).size).toBeGreaterThanOrEqual(4)

    const report = await reportOf(`from=${T0}&to=${T0 + 6 * MIN}`)
    expect(report).toMatchObject({ room: 'gig', from: T0, to: T0 + 6 * MIN, minutesInRange: 6, minutesCovered: 6, resets: 0 })
    expect(report.admitted).toBe(admitted.length)
    expect(report.abandoned).toBe(2)
    expect(report.refused).toEqual({ network: 3, pow: 0 })
    const peak = Math.max(...waitingAt.values())
    const peakAt = [...waitingAt].find(([, n]) => n === peak)?.[0]
    expect(report.peakWaiting).toEqual({ waiting: peak, t: peakAt })
    expect(report.soldOutAt).toBe(T0 + 3 * MIN)
    expect(report.minutes.map((m) => [m.t, m.waiting, m.stock])).toEqual(
      [...waitingAt].map(([t, n]) => [t, n, t < T0 + 150_000 ? 'available' : 'sold_out']),
    )
    // Each minute's admissions, by the store's totals and by the edge's times in queue: those of the minute before it.
    const inMinuteBefore = (t: number) => admitted.filter((s) => (s.admitAt as number) >= t - MIN && (s.admitAt as number) < t).length
    expect(report.minutes.map((m) => m.admitted)).toEqual(report.minutes.map((m, i) => (i === 0 ? null : inMinuteBefore(m.t))))
    expect(report.minutes.map((m) => m.admissions)).toEqual(report.minutes.map((m) => inMinuteBefore(m.t)))

    // Time in queue: every admission in its bucket, and the percentiles from the waits themselves.
    const q = report.timeInQueue
    expect(q.admissions).toBe(admitted.length)
    expect(q.buckets.map((b) => b.le)).toEqual([...QUEUE_WAIT_BUCKETS, null])
    expect(q.buckets.map((b) => b.count)).toEqual(
      [...QUEUE_WAIT_BUCKETS, Number.POSITIVE_INFINITY].map(
        (le, i) => waits.filter((w) => w <= le && (i === 0 || w > (QUEUE_WAIT_BUCKETS[i - 1] as number))).length,
      ),
    )
    const upperBound = (p: number) => ({ le: QUEUE_WAIT_BUCKETS.find((b) => (waits[Math.ceil(p * waits.length) - 1] as number) <= b) })
    expect([q.p50, q.p90, q.p99]).toEqual([upperBound(0.5), upperBound(0.9), upperBound(0.99)])
  })

  it('is the same as CSV, by ?format=csv or Accept: text/csv', async () => {
    const json = await reportOf(`from=${T0}&to=${T0 + 6 * MIN}`)
    for (const res of [
      await admin(`/rooms/gig/report?from=${T0}&to=${T0 + 6 * MIN}&format=csv`),
      await admin(`/rooms/gig/report?from=${new Date(T0).toISOString()}&to=${new Date(T0 + 6 * MIN).toISOString()}`, {
        accept: 'text/csv',
      }),
    ]) {
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
      expect(res.headers.get('content-disposition')).toBe('attachment; filename="anteroom-gig-20270115T0800.csv"')
      const [summary, table] = (await res.text()).split('\r\n\r\n') as [string, string]
      const values = Object.fromEntries(summary.split('\r\n').map((line) => line.split(',')))
      expect(values).toMatchObject({
        admitted: String(json.admitted),
        abandoned: '2',
        refused_network: '3',
        peak_waiting: String(json.peakWaiting?.waiting),
        sold_out_at: new Date(T0 + 3 * MIN).toISOString(),
        queue_wait_admissions: String(json.timeInQueue.admissions),
      })
      const rows = table.trim().split('\r\n')
      expect(rows).toHaveLength(1 + json.minutes.length)
      expect(rows.slice(1).map((r) => r.split(',').slice(0, 4))).toEqual(
        json.minutes.map((m) => [new Date(m.t).toISOString(), String(m.waiting), String(m.active), m.stock]),
      )
    }
  })

  it('covers the last 24 hours by default, on the edge clock', async () => {
    // The clock is at a minute's start: that minute has begun at `to`, which the range leaves out.
    const report = await reportOf('')
    expect([report.from, report.to]).toEqual([clock.now() - 24 * 60 * MIN, clock.now()])
    expect(report.minutes.map((m) => m.t)).toEqual([0, 1, 2, 3, 4].map((m) => T0 + m * MIN))
    expect((await reportOf(`to=${T0 + 2 * MIN}`)).minutesCovered).toBe(2)
  })

  it('refuses a bad range or format with 400 naming the field, a missing room with 404, no credentials with 401', async () => {
    const bad = async (query: string) => {
      const res = await admin(`/rooms/gig/report?${query}`)
      return [res.status, ((await res.json()) as { error: { code: string; field?: string } }).error]
    }
    expect(await bad('from=yesterday')).toEqual([400, expect.objectContaining({ code: 'ERR_BAD_REQUEST', field: 'from' })])
    expect(await bad('to=2027-01-15T08:00:00')).toEqual([400, expect.objectContaining({ code: 'ERR_BAD_REQUEST', field: 'to' })])
    expect(await bad(`from=${T0}&to=${T0}`)).toEqual([400, expect.objectContaining({ field: 'from' })])
    expect(await bad(`from=${T0 - 31 * 24 * 60 * MIN}&to=${T0}`)).toEqual([400, expect.objectContaining({ field: 'from' })])
    expect(await bad('format=xml')).toEqual([400, expect.objectContaining({ field: 'format' })])
    expect((await admin(`/rooms/gig/report?from=${T0 - 30 * 24 * 60 * MIN}&to=${T0}`)).status).toBe(200)
    expect((await admin('/rooms/nope/report')).status).toBe(404)
    expect((await app.request('http://shop.test/_anteroom/api/rooms/gig/report')).status).toBe(401)
  })
})

describe('the analytics of a Worker edge', () => {
  it('records each minute through its StoreRelay, with the reload after a request and with its cron, and serves the report', async () => {
    const url = `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
    const worker = await startWorker({
      script: inject('workerScript'),
      vars: {
        ANTEROOM_ROOMS: JSON.stringify([{ id: 'sale', paths: ['/'], totalActiveUsers: 10, newUsersPerMinute: 1 }]),
        ANTEROOM_ORIGIN: origin.url,
        ANTEROOM_REDIS_URL: url,
        ANTEROOM_QUEUE_SECRET: TEST_SECRET,
        ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('w')]),
        ANTEROOM_HISTORY_SAMPLE_SECONDS: '0',
        ANTEROOM_ADMIN_TOKENS: `ops:${ADMIN}`,
      },
    })
    try {
      const wclock = new WorkerClock(worker, T0)
      await wclock.set(T0)
      const settled = async () => (await worker.request('/__test/settled')).json()
      // The first visitor is let in at once; a second later a request's reload records the minute (a
      // request for no room: it joins nobody). Then one more joins, to wait for the next minute's slot.
      expect((await new Visitor().status(worker.app, 'sale')).state).toBe('admitted')
      await wclock.set(T0 + 1000)
      expect((await new Visitor().request(worker.app, '/_anteroom/status?room=none', { json: true })).status).toBe(404)
      await settled()
      expect((await new Visitor().status(worker.app, 'sale')).state).toBe('queued')
      // The next minute comes with no request: the cron records it.
      await wclock.set(T0 + MIN)
      const entry = (await worker.mf.getWorker()) as unknown as { scheduled(o: { cron: string }): Promise<unknown> }
      await entry.scheduled({ cron: '* * * * *' })
      await settled()
      const res = await worker.request(`/_anteroom/api/rooms/sale/report?from=${T0}&to=${T0 + 2 * MIN}`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
      const report = (await res.json()) as Report
      expect(report.minutes.map((m) => [m.t, m.waiting, m.stock])).toEqual([
        [T0, 0, 'none'],
        [T0 + MIN, 1, 'none'],
      ])
      // The admission, timed by the isolate's metrics, was sent with the first record.
      expect(report.minutes.map((m) => m.admissions)).toEqual([1, 0])
      expect(report.timeInQueue).toMatchObject({ admissions: 1, p50: { le: 5 } })
    } finally {
      await worker.close()
    }
  })
})
