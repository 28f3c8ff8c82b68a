// Measurement 11: what counting a poll for the metrics costs (#30), in the bench's own process.
//   Measured: the metric work of one waiting visitor's poll as the edge does it (src/http/visit.ts):
//   the room's cells looked up (three times), the visit counted (meterVerdict), the recovering flag set,
//   and for one visit in 16 (the default ANTEROOM_METRICS_TIME_EVERY) the clock read three times and
//   the poll and its store call timed. In µs of one core, the median of 5 rounds, against the edge's
//   CPU per JSON poll in measurement 1 of the same run; and in bytes allocated per poll (V8's used heap
//   across a round with no garbage collection in it), for an untimed visit and on average.
//   Targets: at most 2% of a poll's CPU; nothing allocated by a visit that is only counted. Measurement
//   1 also compares whole edges with metrics on and off in the same turns.
import { PerformanceObserver } from 'node:perf_hooks'
import { getHeapStatistics } from 'node:v8'
import type { Verdict } from '../../src/core/visit.js'
import { EdgeMeters, secondsSince, ticks, UNTIMED } from '../../src/http/metrics.js'
import { meterVerdict } from '../../src/http/visit.js'
import { log, type Measured, type Row } from '../lib.js'

const ROUND = 200_000
const ROUNDS = 5

export async function measureMetricsCost(pollCpuUs: number | undefined): Promise<Measured> {
  const rooms = ['line', 'other', 'third']
  const room = { schedule: null } as Parameters<typeof meterVerdict>[1]
  const verdict = { kind: 'wait' } as Verdict
  /** The metric work of one poll, in visit.ts's order, on meters that time one visit in `timeEvery`. */
  const pollOn = (meters: EdgeMeters) => (i: number) => {
    const id = rooms[i % 3] as string
    const started = meters.room(id).timed() ? ticks() : UNTIMED
    if (started !== UNTIMED) meters.storeCall('poll', secondsSince(started), true)
    meters.room(id).recovering = false
    meterVerdict(meters.room(id), room, started, verdict)
  }
  const poll = pollOn(new EdgeMeters(16))
  const untimed = pollOn(new EdgeMeters(1024))

  log(`measure the metrics' cost per poll (${ROUNDS} rounds of ${ROUND})`)
  for (let i = 0; i < ROUND; i++) poll(i)
  const rounds: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now()
    for (let i = 0; i < ROUND; i++) poll(i)
    rounds.push(((performance.now() - t0) * 1000) / ROUND)
  }
  const us = rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)] as number

  // Bytes: the used heap before and after a round, in a round that no garbage collection interrupted.
  let collections = 0
  const gc = new PerformanceObserver((list) => {
    collections += list.getEntries().length
  })
  gc.observe({ entryTypes: ['gc'] })
  const bytesPer = async (f: (i: number) => void): Promise<number | undefined> => {
    for (let i = 0; i < 100_000; i++) f(i)
    for (let attempt = 0; attempt < 20; attempt++) {
      await new Promise((r) => setImmediate(r))
      const before = collections
      const heap = getHeapStatistics().used_heap_size
      // 960 visits: 60 timed ones at 16.
      for (let i = 0; i < 960; i++) f(i)
      const grown = getHeapStatistics().used_heap_size - heap
      await new Promise((r) => setImmediate(r))
      if (collections === before) return Math.max(0, grown) / 960
    }
    return undefined
  }
  const bytes = await bytesPer(poll)
  const untimedBytes = await bytesPer(untimed)
  gc.disconnect()

  const share = pollCpuUs === undefined ? undefined : us / pollCpuUs
  const rows: Row[] = [
    {
      id: 'metrics_cost_per_poll',
      measurement: "11. the metrics' counting per queued poll vs the edge's CPU per JSON poll (measurement 1)",
      value: `${us.toFixed(3)} µs`,
      baseline: pollCpuUs === undefined ? 'n/a' : `${pollCpuUs.toFixed(1)} µs (edge CPU per poll)`,
      ratio: share === undefined ? 'n/a' : share.toFixed(4),
      target: '<= 0.02',
      met: share === undefined ? null : share <= 0.02,
    },
    {
      id: 'metrics_bytes_untimed_poll',
      measurement: '11. bytes the metrics allocate for a queued poll that is counted, not timed (15 in 16)',
      value: untimedBytes === undefined ? 'n/a (a collection in every try)' : `${untimedBytes.toFixed(2)} B`,
      baseline: '',
      ratio: '',
      target: '< 1 B',
      met: untimedBytes === undefined ? null : untimedBytes < 1,
    },
    {
      id: 'metrics_bytes_per_poll',
      measurement: '11. bytes the metrics allocate per queued poll, on average (one in 16 timed: three clock reads)',
      value: bytes === undefined ? 'n/a (a collection in every try)' : `${bytes.toFixed(2)} B`,
      baseline: '',
      ratio: '',
      target: 'info',
      met: null,
    },
  ]
  return {
    rows,
    notes: [],
    warnings: [],
    results: { metricsCost: { usPerPoll: us, bytesPerPoll: bytes, bytesPerUntimedPoll: untimedBytes, pollCpuUs } },
  }
}
