// The analytics sampler (src/http/analytics.ts) on real stores with a manual clock: one record a room
// at each minute's start on the store's clock, the state from the first edge, every edge's admissions
// by time in queue as the change of its histogram since its last record, kept through a failed record
// (a real redis-server stopped and started again), and the stock as the edge saw it.
import { afterAll, describe, expect, it } from 'vitest'
import { memoryStores } from '../src/adapters/memory/stores.js'
import { connectRedis, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { redisStores } from '../src/adapters/redis/stores.js'
import { HistogramCell, QUEUE_WAIT_BUCKETS } from '../src/core/metrics.js'
import { ADMISSION_DEFAULTS, type AdmissionLimits, parseRoomSettings, type RoomSettings } from '../src/core/settings.js'
import type { StockView } from '../src/core/stock.js'
import { AnalyticsSampler } from '../src/http/analytics.js'
import type { AnalyticsStore } from '../src/ports/analytics-store.js'
import { ManualClock } from './support/clock.js'
import { type RedisServer, startRedis } from './support/redis-server.js'

/** A minute's start: 2027-01-15T08:00:00Z. */
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 3_600_000)
const MIN = 60_000
const INF = Number.POSITIVE_INFINITY
/** A visitor who joins a paused line stays in it. */
const PAUSED: AdmissionLimits = {
  ...ADMISSION_DEFAULTS,
  mode: 'paused',
  totalActiveUsers: 10,
  newUsersPerMinute: 60,
  abandonAfterMs: 60_000,
  sessionMs: 600_000,
}

const room = (id: string, event: string | null = null): RoomSettings =>
  parseRoomSettings({ id, paths: [`/${id}`], totalActiveUsers: 10, newUsersPerMinute: 60, event })

/** An edge's sampler over given rooms, stock views and histogram cells. */
function sampler(
  store: Pick<AnalyticsStore, 'record'>,
  clock: ManualClock,
  rooms: RoomSettings[],
  o: { stock?: Map<string, StockView>; cells?: Map<string, HistogramCell>; storeAhead?: number; everyMs?: number } = {},
) {
  const cells = o.cells ?? new Map(rooms.map((r) => [r.id, new HistogramCell(QUEUE_WAIT_BUCKETS)]))
  return {
    cells,
    sampler: new AnalyticsSampler({
      store,
      rooms: { rooms: () => rooms, stock: (id) => o.stock?.get(id) },
      bounds: QUEUE_WAIT_BUCKETS,
      queueWait: (id) => cells.get(id),
      now: () => clock.now(),
      storeNow: () => clock.now() + (o.storeAhead ?? 0),
      everyMs: o.everyMs ?? MIN,
    }),
  }
}

describe('the analytics sampler', () => {
  it("records each room once a minute, at the minute's start, with the admissions since its last record", async () => {
    const clock = new ManualClock(T0 + 10_000)
    const { analytics, queue } = memoryStores(() => clock.now())
    const gig = room('gig', 'gig')
    const plain = room('plain')
    const stock = new Map<string, StockView>([
      ['gig', { event: 'gig', counts: { free: 0, held: 0, sold: 40, reconciledAt: T0, repairs: 0 }, at: T0 }],
    ])
    const { sampler: s, cells } = sampler(analytics, clock, [gig, plain], { stock })
    const wait = (id: string, seconds: number) => cells.get(id)?.observe(seconds)
    // An edge that starts mid-minute records at once: what it admitted before, and the minute's state.
    wait('gig', 3)
    wait('gig', 70)
    await queue.poll({ room: 'plain', visitor: 'v000000000000001', limits: PAUSED, now: clock.now() })
    await s.sample()
    // Later in the same minute: nothing is recorded, however often it is asked.
    wait('gig', 100_000)
    clock.advance(49_999)
    await s.sample()
    await s.sample()
    expect(await analytics.minutes('gig', T0, T0 + 5 * MIN)).toEqual([
      {
        minute: T0 / MIN,
        state: { waiting: 0, active: 0, admitted: 0, abandoned: 0, refused: { network: 0, pow: 0 }, stock: 'sold_out' },
        queueWait: [
          [5, 1],
          [120, 1],
        ],
      },
    ])
    expect((await analytics.minutes('plain', T0, T0 + 5 * MIN)).map((m) => [m.state?.stock, m.state?.waiting])).toEqual([['none', 1]])
    // The next minute begins: the admission since the last record, and nothing twice.
    clock.advance(1)
    await s.sample()
    wait('gig', 4)
    clock.advance(2 * MIN)
    await s.sample()
    const minutes = await analytics.minutes('gig', T0, T0 + 5 * MIN)
    expect(minutes.map((m) => [m.minute - T0 / MIN, m.queueWait])).toEqual([
      [
        0,
        [
          [5, 1],
          [120, 1],
        ],
      ],
      [1, [[INF, 1]]],
      [3, [[5, 1]]],
    ])
    expect(minutes.every((m) => m.state?.stock === 'sold_out')).toBe(true)
  })

  it("takes the state from the minute's first edge; every edge's admissions add up", async () => {
    const clock = new ManualClock(T0)
    const { analytics, queue } = memoryStores(() => clock.now())
    const rooms = [room('sale')]
    const a = sampler(analytics, clock, rooms)
    const b = sampler(analytics, clock, rooms)
    a.cells.get('sale')?.observe(12)
    b.cells.get('sale')?.observe(12)
    b.cells.get('sale')?.observe(400)
    await a.sampler.sample()
    await queue.poll({ room: 'sale', visitor: 'v000000000000001', limits: PAUSED, now: clock.now() })
    await b.sampler.sample()
    expect(await analytics.minutes('sale', T0, T0 + MIN)).toEqual([
      {
        minute: T0 / MIN,
        state: { waiting: 0, active: 0, admitted: 0, abandoned: 0, refused: { network: 0, pow: 0 }, stock: 'none' },
        queueWait: [
          [20, 2],
          [600, 1],
        ],
      },
    ])
  })

  it("follows the store's clock: with the store 30 s ahead, the next record is due 30 s before this edge's minute ends", async () => {
    const clock = new ManualClock(T0)
    const { analytics } = memoryStores(() => clock.now())
    const { sampler: s } = sampler(analytics, clock, [room('sale')], { storeAhead: 30_000 })
    await s.sample()
    clock.set(T0 + 29_999)
    await s.sample()
    expect((await analytics.minutes('sale', T0, T0 + 3 * MIN)).map((m) => m.minute - T0 / MIN)).toEqual([0])
    clock.set(T0 + 30_000)
    await s.sample()
    expect((await analytics.minutes('sale', T0, T0 + 3 * MIN)).map((m) => m.minute - T0 / MIN)).toEqual([0, 1])
  })

  it('records every few minutes when set so, and never when off', async () => {
    const clock = new ManualClock(T0)
    const { analytics } = memoryStores(() => clock.now())
    const every5 = sampler(analytics, clock, [room('five')], { everyMs: 5 * MIN })
    const off = sampler(analytics, clock, [room('off')], { everyMs: 0 })
    for (let m = 0; m < 12; m++) {
      clock.set(T0 + m * MIN)
      await every5.sampler.sample()
      await off.sampler.sample()
    }
    expect((await analytics.minutes('five', T0, T0 + 12 * MIN)).map((m) => m.minute - T0 / MIN)).toEqual([0, 5, 10])
    expect(await analytics.minutes('off', T0, T0 + 12 * MIN)).toEqual([])
  })
})

describe('the analytics sampler when Redis goes away', () => {
  let server: RedisServer | undefined
  afterAll(async () => {
    await server?.stop()
  })

  it('keeps the admissions of a failed record, sends them with the next, and tries again after a while', async () => {
    server = await startRedis()
    const redis = connectRedis(server.url)
    expect(await whenReady(redis, 10_000)).toBe(true)
    const { analytics } = redisStores(redis, luaScripts())
    const clock = new ManualClock(T0)
    const { sampler: s, cells } = sampler(analytics, clock, [room('sale')])
    const cell = cells.get('sale') as HistogramCell
    cell.observe(7)
    await s.sample()
    // Two more admissions, then the store is gone when the next minute begins.
    cell.observe(7)
    cell.observe(50)
    await server.stop()
    clock.set(T0 + MIN)
    await s.sample()
    // It comes back empty (no persistence): the record missed is tried again 10 s later, with what it carried.
    server = await startRedis([], server.port)
    expect(await whenReady(redis, 10_000)).toBe(true)
    cell.observe(2000)
    clock.set(T0 + MIN + 9_999)
    await s.sample()
    expect(await analytics.minutes('sale', T0, T0 + 3 * MIN)).toEqual([])
    clock.set(T0 + MIN + 10_000)
    await s.sample()
    expect((await analytics.minutes('sale', T0, T0 + 3 * MIN)).map((m) => [m.minute - T0 / MIN, m.queueWait])).toEqual([
      [
        1,
        [
          [10, 1],
          [60, 1],
          [2700, 1],
        ],
      ],
    ])
    // And then at the next minute's start, with nothing sent twice.
    clock.set(T0 + 2 * MIN)
    await s.sample()
    expect((await analytics.minutes('sale', T0, T0 + 3 * MIN)).map((m) => [m.minute - T0 / MIN, m.queueWait])).toEqual([
      [
        1,
        [
          [10, 1],
          [60, 1],
          [2700, 1],
        ],
      ],
      [2, []],
    ])
    redis.disconnect()
  })
})
