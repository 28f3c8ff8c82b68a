// The AnalyticsStore contract: one suite, run against every implementation (memory, Redis, a Redis
// Cluster). A minute's state sample comes from the queue and defence stores of the same backend, so
// the harness hands all three; time is passed in, so minutes, hours and days pass without sleeping.
import { describe, expect, it } from 'vitest'
import { ADMISSION_DEFAULTS, type AdmissionLimits } from '../../src/core/settings.js'
import { type AnalyticsStore, MINUTE_MS, SAMPLED_STOCKS } from '../../src/ports/analytics-store.js'
import type { DefenceStore } from '../../src/ports/defence-store.js'
import type { QueueStore } from '../../src/ports/queue-store.js'

export interface AnalyticsHarness {
  analytics: AnalyticsStore
  queue: QueueStore
  defence: DefenceStore
}

let roomSeq = 0
const newRoom = () => `a${Date.now().toString(36)}-${roomSeq++}`
/** The start of an hour (and of a day): 2027-01-15T08:00:00Z. */
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 86_400_000) + 8 * 3_600_000
const INF = Number.POSITIVE_INFINITY
const vid = (i: number) => `v${String(i).padStart(15, '0')}`

const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({
  ...ADMISSION_DEFAULTS,
  mode: 'paused',
  totalActiveUsers: 1000,
  newUsersPerMinute: 6000,
  abandonAfterMs: 30_000,
  sessionMs: 600_000,
  ...over,
})

export function analyticsStoreContract(name: string, make: () => Promise<AnalyticsHarness>): void {
  describe(`AnalyticsStore contract: ${name}`, () => {
    it("takes a minute's state from the queue and defence stores at its first record; later records add only their admissions", async () => {
      const { analytics, queue, defence } = await make()
      const room = newRoom()
      // A line of four; visitor 0 goes silent and is dropped (abandoned); then two are admitted.
      for (let i = 0; i < 4; i++) await queue.poll({ room, visitor: vid(i), limits: limits(), now: T0 + i })
      for (let i = 1; i < 4; i++) await queue.poll({ room, visitor: vid(i), limits: limits(), now: T0 + 20_000 })
      await queue.poll({ room, visitor: vid(1), limits: limits(), now: T0 + 31_000 })
      await queue.poll({ room, visitor: vid(1), limits: limits({ mode: 'fifo', totalActiveUsers: 2 }), now: T0 + 32_000 })
      await queue.poll({ room, visitor: vid(2), limits: limits({ mode: 'fifo', totalActiveUsers: 2 }), now: T0 + 32_000 })
      await defence.addRefusals(room, { network: 5, pow: 2 }, T0 + 33_000)
      for (let i = 4; i < 7; i++) await queue.poll({ room, visitor: vid(i), limits: limits(), now: T0 + 34_000 })

      const at = T0 + 35_000
      const stats = await queue.stats(room, at)
      const totals = await queue.watch(room, 0)
      expect([stats.waiting, stats.active, totals.admitted, totals.abandoned]).toEqual([4, 2, 2, 1])
      expect(
        await analytics.record({
          room,
          stock: 'available',
          queueWait: [
            [30, 1],
            [60, 1],
          ],
          now: at,
        }),
      ).toEqual({ sampled: true, minute: Math.floor(at / MINUTE_MS), now: at })

      // Another edge, later in the same minute: the line has changed, it saw the event sold out, and
      // it admitted three of its own. The state stays as the first record found it.
      await queue.poll({ room, visitor: vid(7), limits: limits(), now: T0 + 40_000 })
      await defence.addRefusals(room, { network: 1 }, T0 + 40_000)
      const later = await analytics.record({
        room,
        stock: 'sold_out',
        queueWait: [
          [60, 2],
          [INF, 1],
          [5, 0],
        ],
        now: T0 + 59_999,
      })
      expect(later).toEqual({ sampled: false, minute: Math.floor(at / MINUTE_MS), now: T0 + 59_999 })
      expect(await analytics.minutes(room, T0, T0 + 60_000)).toEqual([
        {
          minute: T0 / MINUTE_MS,
          state: { waiting: 4, active: 2, admitted: 2, abandoned: 1, refused: { network: 5, pow: 2 }, stock: 'available' },
          queueWait: [
            [30, 1],
            [60, 3],
            [INF, 1],
          ],
        },
      ])
    })

    it('takes a new sample each minute, across an hour and a day, and reads the minutes that start in [from, to), oldest first', async () => {
      const { analytics, queue } = await make()
      const room = newRoom()
      const other = newRoom()
      // Minutes 0, 1, 59 and 60 of an hour, the last minute of a day and the first of the next.
      const dayEnd = T0 + 16 * 3_600_000
      const times = [T0 + 1_000, T0 + 61_000, T0 + 59 * MINUTE_MS + 59_999, T0 + 60 * MINUTE_MS, dayEnd - 30_000, dayEnd + 1]
      for (const [i, t] of times.entries()) {
        await queue.poll({ room, visitor: vid(i), limits: limits({ abandonAfterMs: 86_400_000 }), now: t })
        expect((await analytics.record({ room, stock: 'none', queueWait: [[120, i + 1]], now: t })).sampled).toBe(true)
      }
      await analytics.record({ room: other, stock: 'unknown', queueWait: [], now: T0 + 1_000 })
      const all = await analytics.minutes(room, T0 - 86_400_000, dayEnd + 86_400_000)
      expect(all.map((m) => m.minute)).toEqual(times.map((t) => Math.floor(t / MINUTE_MS)))
      expect(all.map((m) => m.state?.waiting)).toEqual([1, 2, 3, 4, 5, 6])
      expect(all.map((m) => m.queueWait)).toEqual([1, 2, 3, 4, 5, 6].map((n) => [[120, n]]))
      expect(all.every((m) => m.state?.stock === 'none')).toBe(true)
      // A minute is in the range when it starts in it: from is rounded up to a minute, to excluded.
      expect((await analytics.minutes(room, T0 + 1, T0 + 60 * MINUTE_MS)).map((m) => m.state?.waiting)).toEqual([2, 3])
      expect((await analytics.minutes(room, T0, T0 + 60 * MINUTE_MS + 1)).map((m) => m.state?.waiting)).toEqual([1, 2, 3, 4])
      expect((await analytics.minutes(room, dayEnd - MINUTE_MS, dayEnd + MINUTE_MS)).map((m) => m.state?.waiting)).toEqual([5, 6])
      expect(await analytics.minutes(room, T0 + 2 * MINUTE_MS, T0 + 59 * MINUTE_MS)).toEqual([])
      expect(await analytics.minutes(room, T0 + MINUTE_MS, T0 + MINUTE_MS)).toEqual([])
      expect(await analytics.minutes(newRoom(), T0, dayEnd)).toEqual([])
      expect(await analytics.minutes(other, T0, T0 + MINUTE_MS)).toEqual([
        {
          minute: T0 / MINUTE_MS,
          state: { waiting: 0, active: 0, admitted: 0, abandoned: 0, refused: { network: 0, pow: 0 }, stock: 'unknown' },
          queueWait: [],
        },
      ])
    })

    it('keeps each stock state as the edge saw it', async () => {
      const { analytics } = await make()
      const room = newRoom()
      for (const [i, stock] of SAMPLED_STOCKS.entries()) await analytics.record({ room, stock, queueWait: [], now: T0 + i * MINUTE_MS })
      const minutes = await analytics.minutes(room, T0, T0 + SAMPLED_STOCKS.length * MINUTE_MS)
      expect(minutes.map((m) => m.state?.stock)).toEqual(SAMPLED_STOCKS)
    })

    it('takes one state sample and adds every admission when records come at once, with counts of any size', async () => {
      const { analytics } = await make()
      const room = newRoom()
      const big = 9_007_199_254
      const records = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          analytics.record({
            room,
            stock: 'available',
            queueWait: [
              [0.5, 1],
              [3600, i],
              [INF, big],
            ],
            now: T0 + 1000 + i,
          }),
        ),
      )
      expect(records.filter((r) => r.sampled)).toHaveLength(1)
      const [minute] = await analytics.minutes(room, T0, T0 + MINUTE_MS)
      expect(minute?.queueWait).toEqual([
        [0.5, 20],
        [3600, 190],
        [INF, 20 * big],
      ])
    })
  })
}
