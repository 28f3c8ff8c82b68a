// The AnalyticsStore contract on the memory store and on a real redis-server (a Cluster in
// redis-extras.test.ts); how long Redis keeps a room's hours, and what a day of them costs in bytes
// (MEMORY USAGE: the figure docs/redis-keys.md and the README give).
import { describe, expect, it } from 'vitest'
import { MemoryAnalyticsStore } from '../src/adapters/memory/analytics-store.js'
import { memoryStores } from '../src/adapters/memory/stores.js'
import { roomKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { redisStores } from '../src/adapters/redis/stores.js'
import { QUEUE_WAIT_BUCKETS } from '../src/core/metrics.js'
import { ANALYTICS_HOUR_MS, ANALYTICS_KEEP_MS, keptUntil, MINUTE_MS, type WaitCounts } from '../src/ports/analytics-store.js'
import { analyticsStoreContract } from './contract/analytics-store.js'
import { ManualClock } from './support/clock.js'
import { redisClients } from './support/redis-clients.js'

const redis = redisClients()
/** The start of a day (UTC): 2027-01-15T00:00:00Z. */
const DAY = 1_800_000_000_000 - (1_800_000_000_000 % 86_400_000)
let seq = 0
const newRoom = (name: string) => `${name}-${Date.now().toString(36)}-${seq++}`

analyticsStoreContract('memory', async () => memoryStores())
analyticsStoreContract('redis', async () => redisStores(redis(), luaScripts()))

describe('the analytics keys in Redis', () => {
  it('are one hash an hour under the room hash tag, kept 30 days after the hour ends (on the store clock), as a listpack', async () => {
    const client = redis()
    const { analytics } = redisStores(client, luaScripts())
    const room = newRoom('keys')
    const now = DAY + 5 * ANALYTICS_HOUR_MS + 17 * MINUTE_MS + 12_345
    await analytics.record({ room, stock: 'available', queueWait: [[60, 2]], now })
    const hour = Math.floor(now / ANALYTICS_HOUR_MS)
    const key = `${roomKeys(room).analytics}${hour}`
    expect(key).toBe(`anteroom:{${room}}:an:${hour}`)
    expect(await client.keys(`*${room}*`)).toEqual([key])
    expect(await client.hgetall(key)).toEqual({ 17: '0,0,0,0,a', w17: '60:2' })
    const expected = (hour + 1) * ANALYTICS_HOUR_MS + ANALYTICS_KEEP_MS - now
    const ttl = await client.pttl(key)
    expect(ttl).toBeLessThanOrEqual(expected)
    expect(ttl).toBeGreaterThan(expected - 60_000)
    expect(keptUntil(Math.floor(now / MINUTE_MS))).toBe(now + expected)
    expect(await client.object('ENCODING', key)).toBe('listpack')
  })

  it('take about 100 KB a room a day at realistic values: a day of 1,440 minutes, three edges recording each', async () => {
    const client = redis()
    const stores = redisStores(client, luaScripts())
    const room = newRoom('bytes')
    const k = roomKeys(room)
    // A big sale's numbers: 20,000 in line, 500 active, the running totals growing all day.
    for (let i = 0; i < 20_000; i += 1000)
      await client.zadd(k.line, ...Array.from({ length: 1000 }, (_, j) => [i + j, `visitor-${String(i + j).padStart(9, '0')}`]).flat())
    await client.zadd(k.active, ...Array.from({ length: 500 }, (_, j) => [DAY * 2, `active-${j}`]).flat())
    await client.hset(k.refused, 't:network', 1200, 't:pow', 340)
    for (let minute = 0; minute < 1440; minute++) {
      await client.hincrby(k.stats, 'admitted', 100)
      await client.hincrby(k.stats, 'abandoned', 7)
      // Those admitted in one minute arrived close together: their waits fall in one to three buckets.
      const waitBucket = QUEUE_WAIT_BUCKETS[6 + (minute % 8)] as number
      const waits: WaitCounts = [
        [waitBucket, 20 + (minute % 13)],
        [QUEUE_WAIT_BUCKETS[7 + (minute % 8)] as number, 9],
      ]
      for (let edge = 0; edge < 3; edge++)
        await stores.analytics.record({ room, stock: 'available', queueWait: waits, now: DAY + minute * MINUTE_MS + edge * 7_000 })
    }
    const keys = await client.keys(`${k.analytics}*`)
    expect(keys).toHaveLength(24)
    let bytes = 0
    for (const key of keys) {
      expect(await client.object('ENCODING', key)).toBe('listpack')
      bytes += (await client.memory('USAGE', key, 'SAMPLES', 0)) as number
    }
    console.info(
      `analytics: ${bytes} bytes for a day of one room (${(bytes / 1024).toFixed(1)} KiB; 30 days ${((30 * bytes) / 1024 / 1024).toFixed(2)} MiB)`,
    )
    expect(bytes).toBeLessThan(128 * 1024)
    // The report reads them back, every minute.
    const minutes = await stores.analytics.minutes(room, DAY, DAY + 86_400_000)
    expect(minutes).toHaveLength(1440)
    expect(minutes[1439]?.state).toMatchObject({ waiting: 20_000, active: 500, admitted: 144_000, abandoned: 1440 * 7 })
  })

  it('are bounded at the largest values too: every bucket counted, ten-digit totals', async () => {
    const client = redis()
    const stores = redisStores(client, luaScripts())
    const room = newRoom('worst')
    const k = roomKeys(room)
    await client.hset(k.stats, 'admitted', 9_999_999_999, 'abandoned', 9_999_999_999)
    await client.hset(k.refused, 't:network', 9_999_999_999, 't:pow', 9_999_999_999)
    const waits: WaitCounts = [...QUEUE_WAIT_BUCKETS, Number.POSITIVE_INFINITY].map((b) => [b, 999_999])
    for (let minute = 0; minute < 60; minute++)
      await stores.analytics.record({ room, stock: 'all_held', queueWait: waits, now: DAY + minute * MINUTE_MS })
    const [key] = await client.keys(`${k.analytics}*`)
    // Values this long (over hash-max-listpack-value) make the hour a hashtable: the bound includes that.
    expect(await client.object('ENCODING', key as string)).toBe('hashtable')
    const bytes = (await client.memory('USAGE', key as string, 'SAMPLES', 0)) as number
    console.info(
      `analytics: at most ${bytes} bytes for an hour of one room (${((24 * bytes) / 1024).toFixed(1)} KiB a day, ${((24 * 30 * bytes) / 1024 / 1024).toFixed(2)} MiB for 30 days)`,
    )
    expect(bytes).toBeLessThan(32 * 1024)
  })
})

describe('the analytics in memory', () => {
  it('forget a minute 30 days after its hour ends, as Redis expires it', async () => {
    const clock = new ManualClock(DAY + 30 * MINUTE_MS)
    const counts = () => ({ waiting: 1, active: 0, admitted: 0, abandoned: 0, refused: { network: 0, pow: 0 } })
    const store = new MemoryAnalyticsStore(counts, () => clock.now())
    await store.record({ room: 'r', stock: 'none', queueWait: [] })
    const minute = DAY / MINUTE_MS + 30
    clock.set(DAY + ANALYTICS_HOUR_MS + ANALYTICS_KEEP_MS - 1)
    expect((await store.minutes('r', DAY, DAY + ANALYTICS_HOUR_MS)).map((m) => m.minute)).toEqual([minute])
    clock.advance(1)
    expect(await store.minutes('r', DAY, DAY + ANALYTICS_HOUR_MS)).toEqual([])
  })
})
