// A room's post-event report from its stored minutes (ports/analytics-store.ts): a pure function, and
// the same report as CSV. The admin API serves both (admin/report.ts); the admin UI draws it.
//
// Each minute's state sample is taken at the minute's start (every edge's sampler is due then), and
// the admissions it holds are those the edges reported then: the ones of the minute before. So a row
// is the room at the minute's start and what happened in the minute up to it.
//
// Counts are differences of running totals between consecutive samples. A total that went down means
// the store lost the room and started counting again from 0: that minute adds the new total (what
// was counted since the loss; what came between the last sample and the loss is not known).
//
// Time-in-queue percentiles come from the bucket counts: the upper bound of the bucket the percentile
// falls in (`le`: at least that share waited at most this long), or, in the last bucket (+Inf),
// the largest bound (`gt`). Their resolution is the buckets' (core/metrics.ts QUEUE_WAIT_BUCKETS).
import type { MinuteSample, SampledStock, WaitCounts } from '../ports/analytics-store.js'
import { MINUTE_MS, minutesIn } from '../ports/analytics-store.js'
import { noRefusals, REFUSAL_REASONS, type RefusalReason } from '../ports/defence-store.js'

/** A percentile of time in queue, seconds: at most `le`, or more than `gt` (the last bucket); null: nobody was admitted. */
export type Percentile = { le: number } | { gt: number } | null

/** A bucket of the time-in-queue distribution: its upper bound (s; null: no bound, +Inf) and its count. */
export interface ReportBucket {
  le: number | null
  count: number
}

export interface ReportMinute {
  /** The minute's start, ms. */
  t: number
  /** The room at the minute's start; null where the minute holds only admissions. */
  waiting: number | null
  active: number | null
  stock: SampledStock | null
  /** Growth of the running totals since the sample before (null: none before it in the range). */
  admitted: number | null
  abandoned: number | null
  refused: Record<RefusalReason, number> | null
  /** Admissions the edges reported in this minute, by time in queue. */
  admissions: number
  queueWait: ReportBucket[]
}

export interface Report {
  room: string
  /** The range asked for, ms: the minutes that start in [from, to). */
  from: number
  to: number
  minutesInRange: number
  /** Minutes of the range with a state sample. */
  minutesCovered: number
  admitted: number
  abandoned: number
  refused: Record<RefusalReason, number>
  /** Samples whose running totals went down: the store lost the room and counted again from 0. */
  resets: number
  /** The longest line, and the first minute it was that long; null without samples. */
  peakWaiting: { waiting: number; t: number } | null
  /** The first minute whose sample saw the event sold out; null if none did. */
  soldOutAt: number | null
  timeInQueue: { admissions: number; p50: Percentile; p90: Percentile; p99: Percentile; buckets: ReportBucket[] }
  minutes: ReportMinute[]
}

export interface ReportInput {
  room: string
  from: number
  to: number
  /** The range's minutes, oldest first (AnalyticsStore.minutes). */
  samples: readonly MinuteSample[]
  /** The histogram's bounds, so that empty buckets show too (core/metrics.ts QUEUE_WAIT_BUCKETS). */
  bounds?: readonly number[]
}

/** The growth of a running total from `before` to `now`; a total that went down started again from 0. */
function growth(before: number, now: number): number {
  return now >= before ? now - before : now
}

const bucketsOf = (counts: WaitCounts): ReportBucket[] =>
  counts.map(([bound, count]) => ({ le: Number.isFinite(bound) ? bound : null, count }))

/** The percentile `q` (0-1) of a distribution sorted by bound, as the upper bound of its bucket. */
export function percentile(buckets: readonly ReportBucket[], q: number): Percentile {
  const total = buckets.reduce((n, b) => n + b.count, 0)
  if (total === 0) return null
  // The rank of the percentile's visitor (1-based); the epsilon keeps a product like 0.29 x 100 = 28.999... at 29.
  const rank = Math.max(1, Math.ceil(q * total - 1e-9))
  let seen = 0
  for (const b of buckets) {
    seen += b.count
    if (seen >= rank) {
      if (b.le !== null) return { le: b.le }
      break
    }
  }
  const finite = buckets.filter((b) => b.le !== null)
  return { gt: finite.at(-1)?.le ?? 0 }
}

export function buildReport(input: ReportInput): Report {
  const [first, last] = minutesIn(input.from, input.to)
  const merged = new Map<number, number>((input.bounds ?? []).map((b) => [b, 0]))
  if (input.bounds !== undefined) merged.set(Number.POSITIVE_INFINITY, 0)
  const refused = noRefusals()
  let admitted = 0
  let abandoned = 0
  let resets = 0
  let covered = 0
  let peakWaiting: Report['peakWaiting'] = null
  let soldOutAt: number | null = null
  let before: MinuteSample['state'] = null
  const minutes: ReportMinute[] = []
  for (const sample of input.samples) {
    if (sample.minute < first || sample.minute > last) continue
    const t = sample.minute * MINUTE_MS
    for (const [bound, n] of sample.queueWait) merged.set(bound, (merged.get(bound) ?? 0) + n)
    const row: ReportMinute = {
      t,
      waiting: null,
      active: null,
      stock: null,
      admitted: null,
      abandoned: null,
      refused: null,
      admissions: sample.queueWait.reduce((n, [, count]) => n + count, 0),
      queueWait: bucketsOf(sample.queueWait),
    }
    const s = sample.state
    if (s !== null) {
      covered++
      Object.assign(row, { waiting: s.waiting, active: s.active, stock: s.stock })
      if (peakWaiting === null || s.waiting > peakWaiting.waiting) peakWaiting = { waiting: s.waiting, t }
      if (soldOutAt === null && s.stock === 'sold_out') soldOutAt = t
      if (before !== null) {
        const b = before
        row.admitted = growth(b.admitted, s.admitted)
        row.abandoned = growth(b.abandoned, s.abandoned)
        const r = noRefusals()
        for (const reason of REFUSAL_REASONS) r[reason] = growth(b.refused[reason], s.refused[reason])
        row.refused = r
        if (s.admitted < b.admitted || s.abandoned < b.abandoned || REFUSAL_REASONS.some((x) => s.refused[x] < b.refused[x])) resets++
        admitted += row.admitted
        abandoned += row.abandoned
        for (const reason of REFUSAL_REASONS) refused[reason] += r[reason]
      }
      before = s
    }
    minutes.push(row)
  }
  const buckets = bucketsOf([...merged].sort((a, b) => a[0] - b[0]))
  return {
    room: input.room,
    from: input.from,
    to: input.to,
    minutesInRange: Math.max(0, last - first + 1),
    minutesCovered: covered,
    admitted,
    abandoned,
    refused,
    resets,
    peakWaiting,
    soldOutAt,
    timeInQueue: {
      admissions: buckets.reduce((n, b) => n + b.count, 0),
      p50: percentile(buckets, 0.5),
      p90: percentile(buckets, 0.9),
      p99: percentile(buckets, 0.99),
      buckets,
    },
    minutes,
  }
}

/** A percentile as the CSV and the UI write it: "<=600", ">86400", or empty. */
export function percentileText(p: Percentile): string {
  if (p === null) return ''
  return 'le' in p ? `<=${p.le}` : `>${p.gt}`
}

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? '' : new Date(ms).toISOString())
const cell = (v: string | number | null) => {
  const text = v === null ? '' : String(v)
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}
const line = (values: (string | number | null)[]) => values.map(cell).join(',')
const bucketName = (le: number | null) => (le === null ? 'wait_inf' : `wait_le_${le}s`)

/**
 * The report as CSV: the summary (one `name,value` line each), an empty line, then one line a minute
 * with a header, the time-in-queue counts in one column per bucket.
 */
export function reportCsv(report: Report): string {
  const q = report.timeInQueue
  const summary: [string, string | number | null][] = [
    ['room', report.room],
    ['from', iso(report.from)],
    ['to', iso(report.to)],
    ['minutes_in_range', report.minutesInRange],
    ['minutes_covered', report.minutesCovered],
    ['admitted', report.admitted],
    ['abandoned', report.abandoned],
    ...REFUSAL_REASONS.map((r): [string, number] => [`refused_${r}`, report.refused[r]]),
    ['resets', report.resets],
    ['peak_waiting', report.peakWaiting?.waiting ?? null],
    ['peak_waiting_at', iso(report.peakWaiting?.t)],
    ['sold_out_at', iso(report.soldOutAt)],
    ['queue_wait_admissions', q.admissions],
    ['queue_wait_p50_seconds', percentileText(q.p50)],
    ['queue_wait_p90_seconds', percentileText(q.p90)],
    ['queue_wait_p99_seconds', percentileText(q.p99)],
  ]
  const bounds = q.buckets.map((b) => b.le)
  const header = [
    'minute',
    'waiting',
    'active',
    'stock',
    'admitted',
    'abandoned',
    ...REFUSAL_REASONS.map((r) => `refused_${r}`),
    'admissions',
    ...bounds.map(bucketName),
  ]
  const rows = report.minutes.map((m) => {
    const counts = new Map(m.queueWait.map((b) => [b.le, b.count]))
    return line([
      iso(m.t),
      m.waiting,
      m.active,
      m.stock,
      m.admitted,
      m.abandoned,
      ...REFUSAL_REASONS.map((r) => m.refused?.[r] ?? null),
      m.admissions,
      ...bounds.map((le) => counts.get(le) ?? 0),
    ])
  })
  return `${[...summary.map(([k, v]) => line([k, v])), '', line(header), ...rows].join('\r\n')}\r\n`
}
