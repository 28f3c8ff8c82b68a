// Verdicts of a simulated sale: pure functions over the recorded timelines, so tests can feed them
// synthetic timelines. All times here are real milliseconds since the start of the run; limits are the
// limits the edge was actually given (already scaled by the time compression).
//
// A visitor's grant (the store moving them from the line to the active set) happens on somebody's poll,
// not necessarily their own; the visitor learns of it at their next poll. So the grant time is only known
// to lie in (lastQueuedSent, admittedReceived]: after the last poll that still answered "queued" was
// sent, and before the poll that answered "admitted" came back. The verdicts use these intervals so that
// they never report a violation the edge did not commit (they count what is certain).
import { percentile } from '../scripts/lib/stats.js'

export interface VisitorRecord {
  id: number
  /** When the first request was sent. */
  arrivedAt: number
  /** The server's arrival (µs on the store's clock), from the queue token; undefined if never queued. */
  serverArrival?: number
  /** Send time of the last poll that answered queued (or of the first request if admitted at once). */
  lastQueuedSent?: number
  /** Send and receive time of the poll that first answered admitted. */
  admittedSent?: number
  admittedReceived?: number
  /** When the answer to the admitted visitor's last request through the edge came back: a request made
   * after half the session renews it, so the session may run until this plus the session length. */
  lastActivityReceived?: number
  /** The visitor stopped polling while waiting (gave up); lastPollSent is their last poll. */
  abandoned: boolean
  lastPollSent?: number
  /** When the answer to that last poll came back. */
  lastPollReceived?: number
  /** The longest gap between two of this visitor's polls while waiting (event-loop stalls show up here). */
  maxGapMs?: number
  /** Seats this visitor bought, and when. */
  tickets: string[]
  boughtAt?: number
}

/** One store-side sample: the edge's own numbers. */
export interface StoreSample {
  /** Real ms, the midpoint of the stats call. */
  t: number
  waiting: number
  active: number
  admittedLastMinute: number
}

export interface Verdict {
  name: string
  ok: boolean
  /** Informational lines have no pass/fail meaning of their own. */
  info?: boolean
  measured: string
  limit: string
  detail: string
}

/** The interval the grant lies in. */
export function grantInterval(v: VisitorRecord): [number, number] | undefined {
  if (v.admittedReceived === undefined) return undefined
  return [v.lastQueuedSent ?? v.arrivedAt, v.admittedReceived]
}

/**
 * Max number of visitors whose session was certainly running at the same time. A session runs from the
 * grant to the grant plus sessionMs; the inner interval [admittedReceived, admittedSent + sessionMs]
 * lies inside it whatever the latency, so the overlap is a lower bound of the true count.
 */
export function maxCertainActive(visitors: VisitorRecord[], sessionMs: number): number {
  const events: [number, number][] = []
  for (const v of visitors) {
    if (v.admittedReceived === undefined || v.admittedSent === undefined) continue
    const start = v.admittedReceived
    const end = v.admittedSent + sessionMs
    if (end <= start) continue
    events.push([start, 1], [end, -1])
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let cur = 0
  let max = 0
  for (const [, d] of events) {
    cur += d
    if (cur > max) max = cur
  }
  return max
}

export function activeVerdict(visitors: VisitorRecord[], samples: StoreSample[], cap: number, sessionMs: number): Verdict {
  const store = samples.reduce((m, s) => Math.max(m, s.active), 0)
  const seen = maxCertainActive(visitors, sessionMs)
  return {
    name: 'max active sessions',
    ok: store <= cap && seen <= cap,
    measured: `store ${store}, visitor side ${seen}`,
    limit: `totalActiveUsers ${cap}`,
    detail: 'Store: max of the sampled active count. Visitor side: most sessions certainly running at once.',
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

export function rateVerdicts(visitors: VisitorRecord[], samples: StoreSample[], perMinute: number): Verdict[] {
  const w60 = worstWindow(visitors, 60_000)
  const w10 = worstWindow(visitors, 10_000)
  const store = samples.reduce((m, s) => Math.max(m, s.admittedLastMinute), 0)
  const per10 = Math.ceil(perMinute / 6)
  return [
    {
      name: 'worst 60-second admission window',
      ok: w60.count <= perMinute && store <= perMinute,
      measured: `visitor side ${w60.count} (from ${(w60.start / 1000).toFixed(1)} s), store ${store}`,
      limit: `newUsersPerMinute ${perMinute} per real 60 s`,
      detail: 'Grants certainly inside a sliding real 60-s window; store: max sampled admittedLastMinute.',
    },
    {
      name: 'worst 10-second admission window',
      ok: w10.count <= per10,
      measured: `${w10.count} (from ${(w10.start / 1000).toFixed(1)} s)`,
      limit: `ceil(newUsersPerMinute / 6) = ${per10} per real 10 s`,
      detail: 'The edge spreads admissions: at most a sixth of the minute per 10 s.',
    },
  ]
}

/**
 * FIFO inversions: pairs (a, b) where a arrived before b on the server's clock, a never gave up, and a
 * was certainly granted after b: a's grant interval starts after b's ends. Pick-up order is not
 * compared (a visitor granted while between polls collects at the next poll, up to one poll interval
 * later), only what the grant intervals prove.
 */
export function fifoInversions(
  visitors: VisitorRecord[],
  abandonAfterMs = Number.POSITIVE_INFINITY,
): { count: number; example?: [number, number] } {
  // A visitor whose polls were ever abandonAfter apart was (rightly) dropped and rejoined at the back.
  const kept = visitors
    .filter((v) => !v.abandoned && v.serverArrival !== undefined && v.admittedReceived !== undefined && (v.maxGapMs ?? 0) < abandonAfterMs)
    .sort((a, b) => a.serverArrival! - b.serverArrival!)
  let count = 0
  let example: [number, number] | undefined
  // For each b, count earlier a with lo(a) > hi(b). O(n^2) with a cheap early exit on a running max.
  let maxLo = Number.NEGATIVE_INFINITY
  for (let j = 0; j < kept.length; j++) {
    const hiB = grantInterval(kept[j]!)![1]
    if (maxLo > hiB) {
      for (let i = 0; i < j; i++) {
        if (grantInterval(kept[i]!)![0] > hiB) {
          count++
          example ??= [kept[i]!.id, kept[j]!.id]
        }
      }
    }
    maxLo = Math.max(maxLo, grantInterval(kept[j]!)![0])
  }
  return { count, example }
}

export function fifoVerdict(visitors: VisitorRecord[], abandonAfterMs = Number.POSITIVE_INFINITY): Verdict {
  const r = fifoInversions(visitors, abandonAfterMs)
  const lapsed = visitors.filter((v) => !v.abandoned && (v.maxGapMs ?? 0) >= abandonAfterMs).length
  return {
    name: 'FIFO inversions',
    ok: r.count === 0,
    measured: String(r.count) + (r.example ? ` (e.g. visitor ${r.example[0]} granted after ${r.example[1]})` : ''),
    limit: '0',
    detail:
      'Pairs where an earlier arrival who kept polling was certainly granted after a later one (grant order, not pick-up order).' +
      (lapsed > 0 ? ` ${lapsed} visitors whose polls were abandonAfter apart are not counted.` : ''),
  }
}

/**
 * Slots held by abandoned visitors. A visitor who gave up is still granted if they reach the head before
 * the store drops them (abandonAfter after their last poll); nobody collects the admission and the slot
 * must come back abandonAfter after that last poll. Held: gave up, and a later arrival was certainly
 * granted before the giver-up's drop time. Check: at each store sample, the active count must not exceed
 * the sessions possibly running plus the held slots still allowed (last poll + abandonAfter + slack).
 */
export function abandonedSlots(
  visitors: VisitorRecord[],
  samples: StoreSample[],
  o: { sessionMs: number; abandonAfterMs: number; slackMs: number },
): { held: number; worstExcess: number; at?: number } {
  const granted = visitors
    .filter((v) => v.serverArrival !== undefined && v.admittedReceived !== undefined)
    .map((v) => ({ arrival: v.serverArrival!, hi: v.admittedReceived! }))
  const heldBy: VisitorRecord[] = []
  for (const v of visitors) {
    if (!v.abandoned || v.serverArrival === undefined || v.lastPollSent === undefined) continue
    const dropAt = v.lastPollSent + o.abandonAfterMs
    if (granted.some((g) => g.arrival > v.serverArrival! && g.hi < dropAt)) heldBy.push(v)
  }
  let worstExcess = Number.NEGATIVE_INFINITY
  let at: number | undefined
  for (const s of samples) {
    let possible = 0
    for (const v of visitors) {
      if (v.admittedSent === undefined || v.admittedReceived === undefined) continue
      const lo = v.lastQueuedSent ?? v.arrivedAt
      const end = Math.max(v.admittedReceived, v.lastActivityReceived ?? 0) + o.sessionMs
      if (s.t + o.slackMs >= lo && s.t - o.slackMs <= end) possible++
    }
    // Any abandoned visitor may hold a slot until their drop time (a grant we could not see): abandonAfter
    // after the store saw their last poll, which it did before the answer came back.
    for (const v of visitors) {
      if (!v.abandoned || v.lastPollSent === undefined) continue
      const lastSeen = v.lastPollReceived ?? v.lastPollSent
      if (s.t - o.slackMs <= lastSeen + o.abandonAfterMs && s.t + o.slackMs >= v.arrivedAt) possible++
    }
    const excess = s.active - possible
    if (excess > worstExcess) {
      worstExcess = excess
      at = s.t
    }
  }
  return { held: heldBy.length, worstExcess: samples.length === 0 ? 0 : worstExcess, at }
}

export function abandonedVerdict(
  visitors: VisitorRecord[],
  samples: StoreSample[],
  o: { sessionMs: number; abandonAfterMs: number; slackMs: number },
): Verdict {
  const r = abandonedSlots(visitors, samples, o)
  return {
    name: 'slots held by abandoned visitors',
    ok: r.worstExcess <= 0,
    measured: `${r.held} held; store active minus possible holders at worst ${r.worstExcess}${r.at !== undefined ? ` at ${(r.at / 1000).toFixed(1)} s` : ''}`,
    limit: `slots back within abandonAfter (${o.abandonAfterMs / 1000} s real) of the last poll`,
    detail:
      'Held: gave up, yet a later arrival was granted before their drop time. Excess > 0: more slots taken than sessions possibly running ' +
      '(admission to last request + session, renewals included) plus givers-up within abandonAfter of their last poll.',
  }
}

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

export function everyoneVerdict(visitors: VisitorRecord[]): Verdict {
  const stuck = visitors.filter((v) => !v.abandoned && v.admittedReceived === undefined).length
  return {
    name: 'everyone who kept polling was admitted',
    ok: stuck === 0,
    measured: `${stuck} still waiting at the end`,
    limit: '0',
    detail: 'Visitors who never gave up must all get in before the run ends.',
  }
}
