// What the sale came to: seats sold and never twice, the waits, everyone admitted, and how well the
// shown waits (ETA) matched the real ones.
import { percentile } from '../../scripts/lib/stats.js'
import type { Verdict, VisitorRecord } from './records.js'

export interface BookingOutcome {
  seats: number
  /** From the origin: seats sold, tickets, paid payments, and whether its invariant holds. */
  sold: number
  tickets: number
  paid: number
  invariantOk: boolean
  /** Seats marked sold in the seat map. */
  soldInMap: number
}

export function bookingVerdicts(visitors: VisitorRecord[], b: BookingOutcome): Verdict[] {
  const bought = visitors.flatMap((v) => v.tickets)
  const distinct = new Set(bought).size
  const doubles = bought.length - distinct + Math.max(0, b.tickets - b.soldInMap) + (b.invariantOk ? 0 : 1)
  return [
    {
      name: 'seats sold',
      ok: b.sold <= b.seats && b.sold === distinct,
      measured: `${b.sold} sold (${distinct} confirmed to visitors)`,
      limit: `${b.seats} seats`,
      detail: 'Sold must not exceed the seats, and every sold seat was confirmed to exactly one visitor.',
    },
    {
      name: 'double bookings',
      ok: doubles === 0,
      measured: String(doubles),
      limit: '0',
      detail: `Seats ticketed twice (visitor answers and seat map) plus a broken invariant (sold ${b.sold} = tickets ${b.tickets} = paid ${b.paid}).`,
    },
  ]
}

/** Waits in simulated seconds (real ms times the scale / 1000), from first request to seeing "admitted". */
export function waits(visitors: VisitorRecord[], scale: number): number[] {
  return visitors
    .filter((v) => v.admittedReceived !== undefined)
    .map((v) => ((v.admittedReceived! - v.arrivedAt) * scale) / 1000)
    .sort((a, b) => a - b)
}

export function waitVerdict(visitors: VisitorRecord[], scale: number, maxP99Seconds?: number): Verdict {
  const w = waits(visitors, scale)
  const [p50, p95, p99] = [50, 95, 99].map((p) => percentile(w, p)) as [number, number, number]
  const fmt = (x: number) => (Number.isNaN(x) ? '-' : `${Math.round(x)} s`)
  return {
    name: 'wait p50 / p95 / p99',
    ok: maxP99Seconds === undefined || p99 <= maxP99Seconds,
    info: maxP99Seconds === undefined,
    measured: `${fmt(p50)} / ${fmt(p95)} / ${fmt(p99)} (simulated)`,
    limit: maxP99Seconds === undefined ? 'informational' : `p99 <= ${maxP99Seconds} s`,
    detail: 'From the first request to the poll that answered admitted, in simulated seconds.',
  }
}

export function everyoneVerdict(visitors: VisitorRecord[], soldOut = false): Verdict {
  const stuck = visitors.filter((v) => !v.abandoned && v.admittedReceived === undefined && v.soldOutToldAt === undefined).length
  return {
    name: soldOut ? 'everyone who kept polling was admitted or told sold out' : 'everyone who kept polling was admitted',
    ok: stuck === 0,
    measured: `${stuck} still waiting at the end`,
    limit: '0',
    detail: soldOut
      ? 'Visitors who never gave up must all get in, or be told the event has sold out, before the run ends.'
      : 'Visitors who never gave up must all get in before the run ends.',
  }
}

/** How well the shown waits matched: every estimate a later-admitted visitor saw while queued, against their real remaining wait. */
export interface EtaAccuracy {
  /** Estimates compared (non-null etaSeconds of visitors who were admitted later). */
  estimates: number
  /** Within ±tolerance of the real remaining wait. */
  within: number
  share: number
  /** Median of |estimate − real| / real. */
  medianError: number
  /** Estimates shorter than the real wait (too hopeful). */
  tooShort: number
  /** Answers with an etaRange, and those whose range held the real wait. */
  withRange: number
  inRange: number
  /** Queued answers without an estimate (etaSeconds null). */
  nulls: number
}

export function etaAccuracy(visitors: VisitorRecord[], tolerance = 0.2): EtaAccuracy {
  let estimates = 0
  let within = 0
  let tooShort = 0
  let withRange = 0
  let inRange = 0
  let nulls = 0
  const errors: number[] = []
  for (const v of visitors) {
    const e = v.estimates
    if (e === undefined || v.admittedReceived === undefined) continue
    for (let i = 0; i + 3 < e.length; i += 4) {
      const real = (v.admittedReceived - e[i]!) / 1000
      const eta = e[i + 1]!
      if (Number.isNaN(eta)) {
        nulls++
        continue
      }
      estimates++
      const err = real > 0 ? Math.abs(eta - real) / real : eta === 0 ? 0 : Number.POSITIVE_INFINITY
      errors.push(err)
      if (err <= tolerance + 1e-9) within++
      if (eta < real) tooShort++
      const [low, high] = [e[i + 2]!, e[i + 3]!]
      if (!Number.isNaN(low) && !Number.isNaN(high)) {
        withRange++
        if (real >= low && real <= high) inRange++
      }
    }
  }
  errors.sort((a, b) => a - b)
  return {
    estimates,
    within,
    share: estimates === 0 ? Number.NaN : within / estimates,
    medianError: errors.length === 0 ? Number.NaN : percentile(errors, 50),
    tooShort,
    withRange,
    inRange,
    nulls,
  }
}

/**
 * ETA accuracy (issue #12 §4: 90% of estimates within ±20% of the real wait). A pass/fail verdict when
 * `required`, otherwise informational with the figure.
 */
export function etaVerdict(visitors: VisitorRecord[], required = false, goal = 0.9, tolerance = 0.2): Verdict {
  const a = etaAccuracy(visitors, tolerance)
  const pct = (x: number) => (Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)}%`)
  return {
    name: 'ETA within ±20% of the real wait',
    ok: !required || (a.estimates > 0 && a.share >= goal),
    info: !required,
    measured:
      `${pct(a.share)} of ${a.estimates} estimates (median error ${pct(a.medianError)}, ${pct(a.estimates === 0 ? Number.NaN : a.tooShort / a.estimates)} too short` +
      `${a.withRange > 0 ? `; real wait inside etaRange ${pct(a.inRange / a.withRange)}` : ''}${a.nulls > 0 ? `; ${a.nulls} answers without an estimate` : ''})`,
    limit: required ? `>= ${pct(goal)}` : `goal ${pct(goal)} (informational)`,
    detail:
      "Every etaSeconds a queued visitor was shown, against that visitor's real remaining wait (from the answer to the poll that said admitted), " +
      'for the visitors who were admitted; within ±20% of the real wait counts.',
  }
}
