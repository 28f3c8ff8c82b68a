// The post-event report (core/report.ts) on hand-built minutes: percentiles from bucket counts,
// counts from running totals (with a store that lost the room), the sold-out minute, gaps, and the CSV.
import { describe, expect, it } from 'vitest'
import { buildReport, percentile, type ReportBucket, reportCsv } from '../src/core/report.js'
import type { MinuteSample, MinuteState, SampledStock, WaitCounts } from '../src/ports/analytics-store.js'

const M0 = 30_000_000
const T = M0 * 60_000
const INF = Number.POSITIVE_INFINITY

function state(over: Partial<MinuteState> = {}): MinuteState {
  return { waiting: 0, active: 0, admitted: 0, abandoned: 0, refused: { network: 0, pow: 0 }, stock: 'available', ...over }
}
const at = (m: number, s: Partial<MinuteState> | null, queueWait: WaitCounts = []): MinuteSample => ({
  minute: M0 + m,
  state: s === null ? null : state(s),
  queueWait,
})
const report = (samples: MinuteSample[], minutes = 60, bounds?: number[]) =>
  buildReport({ room: 'sale', from: T, to: T + minutes * 60_000, samples, bounds })
const b = (le: number | null, count: number): ReportBucket => ({ le, count })

describe('time in queue percentiles', () => {
  it('are the upper bound of the bucket the percentile falls in', () => {
    // 100 admissions: 50 waited at most 60 s, 40 more at most 300 s, 9 more at most 600 s, 1 longer than an hour.
    const buckets = [b(60, 50), b(300, 40), b(600, 9), b(3600, 0), b(null, 1)]
    expect(percentile(buckets, 0.5)).toEqual({ le: 60 })
    expect(percentile(buckets, 0.51)).toEqual({ le: 300 })
    expect(percentile(buckets, 0.9)).toEqual({ le: 300 })
    expect(percentile(buckets, 0.99)).toEqual({ le: 600 })
    expect(percentile(buckets, 1)).toEqual({ gt: 3600 })
    // In the last bucket a percentile has no upper bound: more than the largest bound.
    expect(percentile([b(60, 1), b(3600, 0), b(null, 99)], 0.5)).toEqual({ gt: 3600 })
    expect(percentile([b(60, 0), b(null, 0)], 0.5)).toBeNull()
    expect(percentile([b(5, 1)], 0.99)).toEqual({ le: 5 })
  })

  it('come from every minute of the range, with edges of other bounds added by bound, and empty buckets kept', () => {
    const r = report(
      [
        at(0, {}, [
          [30, 3],
          [60, 2],
        ]),
        at(1, {}, [[60, 4]]),
        // An edge with other bounds (a rolling deploy): its 45-s bucket sits between the others.
        at(2, {}, [
          [45, 1],
          [INF, 1],
        ]),
        // Outside the range: not counted.
        at(60, {}, [[5, 100]]),
      ],
      60,
      [5, 30, 60, 120],
    )
    expect(r.timeInQueue.buckets).toEqual([b(5, 0), b(30, 3), b(45, 1), b(60, 6), b(120, 0), b(null, 1)])
    expect(r.timeInQueue.admissions).toBe(11)
    expect(r.timeInQueue.p50).toEqual({ le: 60 })
    expect(r.timeInQueue.p90).toEqual({ le: 60 })
    expect(r.timeInQueue.p99).toEqual({ gt: 120 })
    expect(r.minutes.map((m) => m.admissions)).toEqual([5, 4, 2])
    expect(r.minutes[2]?.queueWait).toEqual([b(45, 1), b(null, 1)])
  })

  it('are null when nobody was admitted', () => {
    const r = report([at(0, {}), at(1, {})], 60, [5, 10])
    expect(r.timeInQueue).toEqual({ admissions: 0, p50: null, p90: null, p99: null, buckets: [b(5, 0), b(10, 0), b(null, 0)] })
  })
})

describe('counts from running totals', () => {
  it('are the growth from one sample to the next; the first sample is the baseline', () => {
    const r = report([
      at(0, { admitted: 100, abandoned: 10, refused: { network: 5, pow: 0 } }),
      at(1, { admitted: 130, abandoned: 12, refused: { network: 9, pow: 1 } }),
      at(2, { admitted: 150, abandoned: 12, refused: { network: 9, pow: 4 } }),
    ])
    expect([r.admitted, r.abandoned, r.refused, r.resets]).toEqual([50, 2, { network: 4, pow: 4 }, 0])
    expect(r.minutes.map((m) => [m.admitted, m.abandoned, m.refused])).toEqual([
      [null, null, null],
      [30, 2, { network: 4, pow: 1 }],
      [20, 0, { network: 0, pow: 3 }],
    ])
  })

  it('count from 0 again where a total went down: the store lost the room and started again', () => {
    const r = report([
      at(0, { admitted: 100, abandoned: 40, refused: { network: 7, pow: 0 } }),
      at(1, { admitted: 120, abandoned: 45, refused: { network: 8, pow: 0 } }),
      // Redis was flushed: the totals start again; 6 admitted and 1 refused since.
      at(2, { admitted: 6, abandoned: 0, refused: { network: 1, pow: 0 } }),
      at(3, { admitted: 16, abandoned: 2, refused: { network: 1, pow: 0 } }),
    ])
    expect(r.minutes.map((m) => m.admitted)).toEqual([null, 20, 6, 10])
    expect(r.minutes.map((m) => m.abandoned)).toEqual([null, 5, 0, 2])
    expect([r.admitted, r.abandoned, r.refused.network, r.resets]).toEqual([36, 7, 2, 1])
  })

  it('span a gap: the growth across missing minutes lands on the first minute after it', () => {
    const r = report([at(0, { admitted: 10 }), at(1, { admitted: 12 }), at(7, { admitted: 40, waiting: 3 }), at(8, { admitted: 41 })])
    expect(r.minutes.map((m) => [m.t - T, m.admitted])).toEqual([
      [0, null],
      [60_000, 2],
      [420_000, 28],
      [480_000, 1],
    ])
    expect([r.admitted, r.minutesCovered, r.minutesInRange]).toEqual([31, 4, 60])
  })

  it('skip a minute that holds admissions only, and leave its state empty', () => {
    const r = report([at(0, { admitted: 10 }), at(1, null, [[30, 2]]), at(2, { admitted: 15 })])
    expect(r.minutes.map((m) => [m.waiting, m.admitted, m.admissions])).toEqual([
      [0, null, 0],
      [null, null, 2],
      [0, 5, 0],
    ])
    expect([r.admitted, r.minutesCovered]).toEqual([5, 2])
  })
})

describe('the peak and the sold-out minute', () => {
  it('take the first minute of the longest line, and the first minute that saw the event sold out', () => {
    const stocks: SampledStock[] = ['available', 'all_held', 'sold_out', 'available', 'sold_out']
    const r = report(stocks.map((stock, i) => at(i, { stock, waiting: [5, 9, 9, 2, 0][i] })))
    expect(r.peakWaiting).toEqual({ waiting: 9, t: T + 60_000 })
    expect(r.soldOutAt).toBe(T + 120_000)
    expect(r.minutes.map((m) => m.stock)).toEqual(stocks)
  })

  it('are null for a sale that never sold out, and for a range without samples', () => {
    expect(report([at(0, { stock: 'all_held' }), at(1, { stock: 'none' })]).soldOutAt).toBeNull()
    const empty = report([])
    expect([empty.peakWaiting, empty.soldOutAt, empty.minutesCovered, empty.admitted, empty.minutes]).toEqual([null, null, 0, 0, []])
  })

  it('counts the minutes that start in the range', () => {
    expect(buildReport({ room: 'r', from: T + 1, to: T + 120_000, samples: [at(0, {}), at(1, {})] }).minutes.map((m) => m.t)).toEqual([
      T + 60_000,
    ])
    expect(buildReport({ room: 'r', from: T, to: T + 120_001, samples: [] }).minutesInRange).toBe(3)
    expect(buildReport({ room: 'r', from: T, to: T, samples: [] }).minutesInRange).toBe(0)
  })
})

describe('the report as CSV', () => {
  it('is the summary, an empty line, then a line a minute with a column per bucket', () => {
    const r = report(
      [
        at(0, { waiting: 40, active: 10, admitted: 5 }),
        at(1, { waiting: 42, active: 12, admitted: 9, stock: 'sold_out', refused: { network: 2, pow: 0 } }, [
          [60, 3],
          [INF, 1],
        ]),
      ],
      60,
      [60, 600],
    )
    const [summary, table] = reportCsv(r).split('\r\n\r\n') as [string, string]
    expect(Object.fromEntries(summary.split('\r\n').map((l) => l.split(',')))).toEqual({
      room: 'sale',
      from: new Date(T).toISOString(),
      to: new Date(T + 3_600_000).toISOString(),
      minutes_in_range: '60',
      minutes_covered: '2',
      admitted: '4',
      abandoned: '0',
      refused_network: '2',
      refused_pow: '0',
      resets: '0',
      peak_waiting: '42',
      peak_waiting_at: new Date(T + 60_000).toISOString(),
      sold_out_at: new Date(T + 60_000).toISOString(),
      queue_wait_admissions: '4',
      queue_wait_p50_seconds: '<=60',
      queue_wait_p90_seconds: '>600',
      queue_wait_p99_seconds: '>600',
    })
    expect(table.split('\r\n')).toEqual([
      'minute,waiting,active,stock,admitted,abandoned,refused_network,refused_pow,admissions,wait_le_60s,wait_le_600s,wait_inf',
      `${new Date(T).toISOString()},40,10,available,,,,,0,0,0,0`,
      `${new Date(T + 60_000).toISOString()},42,12,sold_out,4,0,2,0,4,3,0,1`,
      '',
    ])
  })
})
