// The room's caps, from the visitors' records and the store's: the most sessions running at once, and
// the admission rate (its worst one-second and 60-second windows, and the rate while saturated).
import { emissionIntervalUs, perSecondCap } from '../../src/core/admission.js'
import { type AdmissionRecord, grantInterval, type StoreSample, type Verdict, type VisitorRecord } from './records.js'

/**
 * Max number of visitors whose session was certainly running at the same time. A session runs from the
 * grant to the grant plus sessionMs (or from the last renewal); the inner interval [admittedReceived,
 * admittedSent + sessionMs] (or the renewal's send time + sessionMs) lies inside it whatever the
 * latency, so the overlap is a lower bound of the true count. These are sessions the visitors hold: a
 * valid admission token each, whether the store still knows them or not.
 */
export function maxCertainActive(visitors: VisitorRecord[], sessionMs: number): number {
  return certainActiveAt(visitors, sessionMs).max
}

/** The most sessions certainly running at once, and when. */
export function certainActiveAt(visitors: VisitorRecord[], sessionMs: number): { max: number; at?: number } {
  const events: [number, number][] = []
  for (const v of visitors) {
    if (v.admittedReceived === undefined || v.admittedSent === undefined) continue
    const start = v.admittedReceived
    // A session the origin ended certainly ran until the request that ended it was sent.
    const end = v.sessionEndedAt ?? Math.max(v.admittedSent + sessionMs, v.sessionEnd ?? 0)
    if (end <= start) continue
    events.push([start, 1], [end, -1])
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let cur = 0
  let max = 0
  let at: number | undefined
  for (const [t, d] of events) {
    cur += d
    if (cur > max) {
      max = cur
      at = t
    }
  }
  return { max, at }
}

export function activeVerdict(visitors: VisitorRecord[], samples: StoreSample[], cap: number, sessionMs: number): Verdict {
  const store = samples.reduce((m, s) => Math.max(m, s.active), 0)
  const held = samples.reduce((m, s) => Math.max(m, s.active + (s.reserved ?? 0)), 0)
  const seen = certainActiveAt(visitors, sessionMs)
  return {
    name: 'max active sessions',
    ok: store <= cap && seen.max <= cap,
    measured:
      `store ${store}${held > store ? ` (with slots reserved after a loss ${held})` : ''}, ` +
      `visitor side ${seen.max}${seen.at !== undefined ? ` at ${(seen.at / 1000).toFixed(1)} s` : ''}`,
    limit: `totalActiveUsers ${cap}`,
    detail:
      'Store: max of the sampled active count. Visitor side: most sessions certainly running at once (admitted or renewed, ' +
      'not yet expired), counted from the visitors whether the store still knows them or not, so a store that forgot sessions ' +
      'and admitted others in their place shows here.',
  }
}

/** The most grants certainly inside any half-open window (a, a + windowMs]. */
export function worstWindow(visitors: VisitorRecord[], windowMs: number): { count: number; start: number } {
  // Widened by 1 ms each side: the store's clock counts whole milliseconds.
  const iv = visitors
    .map(grantInterval)
    .filter((x): x is [number, number] => x !== undefined)
    .map(([lo, hi]): [number, number] => [lo - 1, hi + 1])
  // A grant is certainly in (a, a+w] when lo >= a and hi <= a + w (lo is exclusive, so lo > a suffices; we
  // use lo >= a which is the same window shifted by an instant). The best a is one of the lo values.
  iv.sort((x, y) => x[0] - y[0])
  let best = { count: 0, start: 0 }
  for (let i = 0; i < iv.length; i++) {
    const a = iv[i]![0]
    let n = 0
    for (let j = i; j < iv.length && iv[j]![0] < a + windowMs; j++) if (iv[j]![1] <= a + windowMs) n++
    if (n > best.count) best = { count: n, start: a }
  }
  return best
}

/** The most entries of a sorted list of times within `windowMs` of the first: t[j] − t[i] < windowMs. */
export function densestWindow(times: readonly number[], windowMs: number): { count: number; start: number } {
  let best = { count: 0, start: 0 }
  let i = 0
  for (let j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= windowMs) i++
    if (j - i + 1 > best.count) best = { count: j - i + 1, start: times[i]! }
  }
  return best
}

/**
 * The most admissions the rule lets into any window of `windowMs`: the pace gives each admission a
 * slot one emission interval after the last, never more than a second (CATCH_UP_US) behind the time,
 * so slots in a window lie within it plus that second before it.
 */
export function paceBound(perMinute: number, windowMs: number): number {
  return Math.floor(((windowMs + 1000) * 1000) / emissionIntervalUs(perMinute)) + 1
}

export interface RateInput {
  /** newUsersPerMinute as the edge has it (real). */
  perMinute: number
  /** The store's own record of its admissions, if the simulator could read it. */
  record?: AdmissionRecord
  totalActiveUsers: number
  /** Times when the store admits nobody by design (a recovery after a loss), real ms, left out of the saturated rate. */
  excluded?: [number, number][]
}

/**
 * The worst one-second and 60-second windows, and the rate while saturated: admissions per minute over
 * the stretches when the line was long (at least two seconds' admissions waiting) and the room had room
 * for a second's admissions, between two store samples (250 ms apart).
 */
export function rateVerdicts(visitors: VisitorRecord[], samples: StoreSample[], input: RateInput | number): Verdict[] {
  const o: RateInput = typeof input === 'number' ? { perMinute: input, totalActiveUsers: Number.POSITIVE_INFINITY } : input
  const n = o.perMinute
  const cap1 = perSecondCap(n)
  const cap60 = paceBound(n, 60_000)
  const w60 = worstWindow(visitors, 60_000)
  const w1 = worstWindow(visitors, 1000)
  const store60 = samples.reduce((m, s) => Math.max(m, s.admittedLastMinute), 0)
  const r1 = o.record ? densestWindow(o.record, 1000) : undefined
  const r60 = o.record ? densestWindow(o.record, 60_000) : undefined
  const at = (w: { start: number }) => `from ${(w.start / 1000).toFixed(1)} s`
  const sat = saturatedRate(samples, o)
  const satOk = sat === undefined || sat.perMinute >= 0.95 * n
  return [
    {
      name: 'worst one-second admission window',
      ok: w1.count <= cap1 && (r1 === undefined || r1.count <= cap1),
      measured: `${r1 ? `store ${r1.count} (${at(r1)}), ` : ''}visitor side ${w1.count}`,
      limit: `floor(newUsersPerMinute / 60) + 1 = ${cap1} per real second`,
      detail:
        'Store: the most admissions the store recorded (its own clock, ms) within any second. Visitor side: grants certainly inside one (a lower bound; a grant is only known to lie between two polls). ' +
        (o.record ? '' : 'The store could not be read here, so only the visitor side is checked.'),
    },
    {
      name: 'worst 60-second admission window',
      ok: w60.count <= cap60 && store60 <= cap60 && (r60 === undefined || r60.count <= cap60),
      measured: `${r60 ? `store record ${r60.count} (${at(r60)}), ` : ''}visitor side ${w60.count} (${at(w60)}), store admittedLastMinute ${store60}`,
      limit: `newUsersPerMinute ${n}, paced: at most ${cap60} in any real 60 s`,
      detail:
        'The pace allows 61 s of slots into a minute (an idle room catches up one second): floor(61 s / emission interval) + 1. ' +
        'Store record, grants certainly inside a sliding real 60-s window, and the max sampled admittedLastMinute.',
    },
    {
      name: 'saturated admission rate',
      ok: satOk,
      info: sat === undefined,
      measured:
        sat === undefined
          ? o.record
            ? 'not measured: the line was never long with the room short of full for 5 s'
            : 'not measured: no store record'
          : `${sat.perMinute.toFixed(0)} a minute (${(sat.perMinute / n).toFixed(3)} of the setting) over ${(sat.ms / 1000).toFixed(1)} s`,
      limit: `>= 0.95 x newUsersPerMinute = ${(0.95 * n).toFixed(0)} a minute`,
      detail:
        `Admissions in the store's record while the line was long (>= ${2 * cap1} waiting) and the room short of full by a second's admissions ` +
        '(active + reserved <= totalActiveUsers - ' +
        `${cap1}), at both ends of each 250-ms sample interval, outside any recovery after a loss; measured when such stretches add up to 5 s.`,
    },
  ]
}

/** Admissions per minute over the saturated stretches (see rateVerdicts); undefined under 5 s of them. */
export function saturatedRate(samples: StoreSample[], o: RateInput): { perMinute: number; ms: number; admissions: number } | undefined {
  if (!o.record) return undefined
  const cap1 = perSecondCap(o.perMinute)
  const saturated = (s: StoreSample) =>
    s.waiting >= 2 * cap1 &&
    s.active + (s.reserved ?? 0) <= o.totalActiveUsers - cap1 &&
    !(o.excluded ?? []).some(([a, b]) => s.t >= a && s.t <= b)
  let ms = 0
  let admissions = 0
  const rec = o.record
  let k = 0
  for (let i = 0; i + 1 < samples.length; i++) {
    const a = samples[i]!
    const b = samples[i + 1]!
    if (!saturated(a) || !saturated(b) || b.t - a.t > 1000) continue
    ms += b.t - a.t
    while (k < rec.length && rec[k]! <= a.t) k++
    let j = k
    while (j < rec.length && rec[j]! <= b.t) j++
    admissions += j - k
  }
  if (ms < 5000) return undefined
  return { perMinute: (admissions / ms) * 60_000, ms, admissions }
}
