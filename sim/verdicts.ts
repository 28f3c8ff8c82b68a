// Verdicts of a simulated sale: pure functions over the recorded timelines, so tests can feed them
// synthetic timelines. All times here are real milliseconds since the start of the run; limits are the
// limits the edge was actually given (already scaled by the time compression).
//
// A visitor's grant (the store moving them from the line to the active set) happens on somebody's poll,
// not necessarily their own; the visitor learns of it at their next poll. So the grant time is only known
// to lie in (lastQueuedSent, admittedReceived]: after the last poll that still answered "queued" was
// sent, and before the poll that answered "admitted" came back. The verdicts use these intervals so that
// they never report a violation the edge did not commit (they count what is certain).
import { createHash, createHmac } from 'node:crypto'
import { percentile } from '../scripts/lib/stats.js'
import { emissionIntervalUs, perSecondCap } from '../src/core/admission.js'

export interface VisitorRecord {
  id: number
  /** When the first request was sent. */
  arrivedAt: number
  /** The server's arrival (µs on the store's clock), from the queue token; undefined if never queued. */
  serverArrival?: number
  /** Send time of the last poll that answered queued, paused or recovering (undefined if admitted at once). */
  lastQueuedSent?: number
  /**
   * Around a store fault (a loss or a failover, see StoreFault): the send time of the last poll that
   * answered while waiting before the fault began (sent and received before it), and of the last one
   * sent after the store was back. The store's memory before and after are compared apart.
   */
  lastQueuedBeforeFault?: number
  lastQueuedAfterFault?: number
  /** Polls answered recovering (the store forgot the room and admits nobody for a while). */
  recoveringPolls?: number
  /** The arrival in the visitor's queue token moved later while they kept polling (their place was lost). */
  movedBack?: number
  /** The first time it moved: when (ms, the poll's send time), by how much (ms), and how long after the visitor's last answer before it. */
  movedBackFirst?: { at: number; byMs: number; gapMs: number }
  /**
   * Every wait this visitor was shown while queued, flat: [received ms, etaSeconds, range low, range
   * high] per answer, NaN where the answer had none.
   */
  estimates?: number[]
  /**
   * The end of the session as far as it is certain: the send time of the request that brought the
   * admission, or the last renewal of it (a new admission cookie), plus the session length.
   */
  sessionEnd?: number
  /** The send time of the request whose answer ended the session (the origin's end-session after a purchase). */
  sessionEndedAt?: number
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
  /**
   * A scheduled sale: the visitor's ticket (their id) as last answered; every ticket answered prequeue
   * (a second one after a drop and a rejoin); when the first such answer's poll was sent; and the
   * [ticket, rank] last shown after the opening.
   */
  ticket?: string
  prequeueTickets?: string[]
  joinedAt?: number
  drawShown?: [string, number]
  /** Proofs of work solved before the join, their hashes and real ms, all together. */
  powSolves?: number
  powHashes?: number
  powMs?: number
  /** Joins refused over the network cap (429). */
  refusedJoins?: number
  /** Polls whose queue token had lapsed when answered (the edge took them for a newcomer). */
  lapsedTokens?: number
  /** A scheduled sale, where a wait runs from the opening (arrivedAt): when the first request was sent. */
  requestedAt?: number
  /** A place a bot took (polled like anyone's; it buys nothing). */
  bot?: boolean
  /**
   * A sale of a room linked to its event (--sold-out): when the first answer that said sold_out came
   * back (the visitor then left), and how many answers said all_held (everything held; they kept polling).
   */
  soldOutToldAt?: number
  heldAnswers?: number
  /** The visitor held seats and let them go instead of paying (--release-share). */
  releasedHold?: boolean
}

/** One store-side sample: the edge's own numbers. */
export interface StoreSample {
  /** Real ms, the midpoint of the stats call. */
  t: number
  waiting: number
  active: number
  admittedLastMinute: number
  /** Slots the store keeps for sessions from before a loss (0 without one; undefined when the store does not say). */
  reserved?: number
}

/**
 * A fault of the store during the run, real ms: `start` when it began (the flush sent, the server or
 * primary killed), `end` when the simulator's own connection saw the store answer again.
 */
export interface StoreFault {
  kind: 'flush' | 'restart' | 'failover'
  start: number
  end: number
  /** When visitors were first and last answered recovering after it (receive times). */
  recovering?: [number, number]
  /** Polls answered busy (503: the store away) while the fault lasted, and after it. */
  busy: number
  /** What the fault took, in words (e.g. the primary's port and the replica promoted). */
  note?: string
  /** Visitors admitted before it whose admission was renewed after it (the edge re-registering a session the store forgot). */
  reregistered: number
  /** Of the visitors admitted before it, those still browsing after it (who could re-register). */
  browsingAfter: number
}

/** What the store recorded of its admissions: their times, real ms, ascending (the store's clock). */
export type AdmissionRecord = number[]

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

/**
 * FIFO inversions: pairs (a, b) where a arrived before b on the server's clock, a never gave up, and a
 * was certainly granted after b: a's grant interval starts after b's ends. Pick-up order is not
 * compared (a visitor granted while between polls collects at the next poll, up to one poll interval
 * later), only what the grant intervals prove.
 *
 * With a store fault, the store's memory before it and after it are compared apart: a visitor granted
 * just before a loss who had not collected it is granted again after it (the store forgot), and being
 * collected after later arrivals who were granted before the loss is no inversion; but within each
 * side, everyone who kept polling must be granted in arrival order. Before: the polls sent and answered
 * before the fault began; after: those sent once the store answered again.
 */
export function fifoInversions(
  visitors: VisitorRecord[],
  abandonAfterMs = Number.POSITIVE_INFINITY,
  fault?: Pick<StoreFault, 'start' | 'end'>,
): { count: number; example?: [number, number] } {
  // A visitor whose polls were ever abandonAfter apart was (rightly) dropped and rejoined at the back.
  const kept = visitors
    .filter((v) => !v.abandoned && v.serverArrival !== undefined && (v.maxGapMs ?? 0) < abandonAfterMs)
    .sort((a, b) => a.serverArrival! - b.serverArrival!)
  const sides: Interval[][] = []
  if (fault === undefined) {
    sides.push(
      kept.filter((v) => v.admittedReceived !== undefined).map((v) => ({ id: v.id, lo: grantInterval(v)![0], hi: v.admittedReceived! })),
    )
  } else {
    const before: Interval[] = []
    const after: Interval[] = []
    for (const v of kept) {
      const admitted = v.admittedReceived !== undefined && v.admittedSent !== undefined
      if (admitted && v.admittedReceived! < fault.start) before.push({ id: v.id, lo: grantInterval(v)![0], hi: v.admittedReceived! })
      else if (v.lastQueuedBeforeFault !== undefined) before.push({ id: v.id, lo: v.lastQueuedBeforeFault, hi: undefined })
      if (admitted && v.admittedSent! > fault.end) after.push({ id: v.id, lo: v.lastQueuedAfterFault, hi: v.admittedReceived! })
    }
    sides.push(before, after)
  }
  let count = 0
  let example: [number, number] | undefined
  for (const side of sides) {
    const r = countInversions(side)
    count += r.count
    example ??= r.example
  }
  return { count, example }
}

/** A visitor's grant on one side of a fault: after `lo` (undefined: unknown) and by `hi` (undefined: not on this side). */
interface Interval {
  id: number
  lo: number | undefined
  hi: number | undefined
}

/** Pairs i < j (arrival order) with lo(i) > hi(j). O(n^2) with a cheap early exit on a running max. */
function countInversions(items: Interval[]): { count: number; example?: [number, number] } {
  let count = 0
  let example: [number, number] | undefined
  let maxLo = Number.NEGATIVE_INFINITY
  for (let j = 0; j < items.length; j++) {
    const hiB = items[j]!.hi
    if (hiB !== undefined && maxLo > hiB) {
      for (let i = 0; i < j; i++) {
        const lo = items[i]!.lo
        if (lo !== undefined && lo > hiB) {
          count++
          example ??= [items[i]!.id, items[j]!.id]
        }
      }
    }
    maxLo = Math.max(maxLo, items[j]!.lo ?? Number.NEGATIVE_INFINITY)
  }
  return { count, example }
}

export function fifoVerdict(visitors: VisitorRecord[], abandonAfterMs = Number.POSITIVE_INFINITY, fault?: StoreFault): Verdict {
  const r = fifoInversions(visitors, abandonAfterMs, fault)
  const lapsed = visitors.filter((v) => !v.abandoned && (v.maxGapMs ?? 0) >= abandonAfterMs).length
  return {
    name: 'FIFO inversions',
    ok: r.count === 0,
    measured: String(r.count) + (r.example ? ` (e.g. visitor ${r.example[0]} granted after ${r.example[1]})` : ''),
    limit: '0',
    detail:
      'Pairs where an earlier arrival who kept polling was certainly granted after a later one (grant order, not pick-up order).' +
      (fault ? ` Before the ${fault.kind} and after it apart: the store's memory of each side.` : '') +
      (lapsed > 0 ? ` ${lapsed} visitors whose polls were abandonAfter apart are not counted.` : ''),
  }
}

/**
 * Places lost: visitors who kept polling (never abandonAfter apart) and yet were not admitted by the
 * end, or whose queue token came back with a later arrival (sent to the back of the line).
 */
export function placesVerdict(visitors: VisitorRecord[], abandonAfterMs: number, fault?: StoreFault): Verdict {
  const kept = visitors.filter((v) => !v.abandoned && (v.maxGapMs ?? 0) < abandonAfterMs)
  const back = kept.filter((v) => (v.movedBack ?? 0) > 0)
  const stuck = kept.filter((v) => v.admittedReceived === undefined)
  const inLine = fault
    ? kept.filter((v) => v.arrivedAt < fault.start && (v.admittedReceived === undefined || v.admittedReceived > fault.start)).length
    : undefined
  return {
    name: 'places lost',
    ok: back.length + stuck.length === 0,
    measured:
      `${back.length + stuck.length} (${back.length} sent back, ${stuck.length} never admitted)` +
      (back[0]?.movedBackFirst
        ? ` (e.g. moved back by ${(back[0].movedBackFirst.byMs / 1000).toFixed(2)} s at ${(back[0].movedBackFirst.at / 1000).toFixed(1)} s, ${(back[0].movedBackFirst.gapMs / 1000).toFixed(2)} s after its last answer)`
        : '') +
      (inLine !== undefined ? ` of ${inLine} in line at the ${fault?.kind}` : ''),
    limit: '0',
    detail:
      'Visitors who kept polling: the arrival in their queue token must never move later (a place restored at the signed arrival), ' +
      'and every one of them must be admitted in the end.',
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
  o: { sessionMs: number; abandonAfterMs: number; slackMs: number; fault?: Pick<StoreFault, 'start' | 'end'> },
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
    // Before a fault's end, a visitor admitted after it may have been granted before it (then forgotten).
    const beforeEnd = o.fault !== undefined && s.t - o.slackMs <= o.fault.end
    for (const v of visitors) {
      if (v.admittedSent === undefined || v.admittedReceived === undefined) continue
      const lo = beforeEnd && v.lastQueuedBeforeFault !== undefined ? v.lastQueuedBeforeFault : (v.lastQueuedSent ?? v.arrivedAt)
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
  o: { sessionMs: number; abandonAfterMs: number; slackMs: number; fault?: Pick<StoreFault, 'start' | 'end'> },
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

/**
 * After a loss the store admits nobody for 2 × refreshSeconds + 1 s, so that everybody polling is back
 * at their arrival first: no admission in its record from the loss until that long after it began,
 * and visitors were answered recovering. A failover that lost nothing needs no recovery (informational).
 */
export function recoveryVerdict(fault: StoreFault, record: AdmissionRecord | undefined, recoveryMs: number, scale: number): Verdict {
  const rel = (t: number) => `${((t - fault.start) / 1000).toFixed(1)} s`
  const firstAfter = record?.find((t) => t >= fault.end)
  const early = record?.filter((t) => t >= fault.end && t < fault.start + recoveryMs).length ?? 0
  const expected = fault.kind !== 'failover'
  const quiet = firstAfter === undefined ? undefined : firstAfter - fault.start
  return {
    name: `recovery after the ${fault.kind}`,
    ok: !expected || (fault.recovering !== undefined && early === 0),
    info: !expected,
    measured:
      `${fault.recovering ? `recovering answered ${rel(fault.recovering[0])} to ${rel(fault.recovering[1])} after it` : 'never answered recovering'}; ` +
      (quiet === undefined
        ? 'no admission after it in the store record'
        : `no admissions for ${(quiet / 1000).toFixed(1)} real s (${((quiet / 1000) * scale).toFixed(0)} sale s)` +
          (quiet > recoveryMs + 1000 ? ': the recovery, then the slots reserved for the sessions from before' : '')) +
      (early > 0 && (expected || fault.recovering !== undefined) ? `; ${early} admitted within the recovery` : '') +
      `; store back after ${((fault.end - fault.start) / 1000).toFixed(2)} s` +
      `; ${fault.reregistered} of ${fault.browsingAfter} sessions from before it that were used after it renewed${expected ? ' (re-registered)' : ''}` +
      (fault.busy > 0 ? `; ${fault.busy} polls answered busy` : ''),
    limit: expected
      ? `nobody admitted for 2 x refreshSeconds + 1 = ${(recoveryMs / 1000).toFixed(0)} real s`
      : 'no recovery needed unless the replica missed writes',
    detail:
      'From the store record: the first admission after the store was back, counted from the fault. The store admits nobody while recovering, ' +
      'so every visitor still polling is back at the arrival in their token before anyone is let in.' +
      (fault.note ? ` ${fault.note}` : ''),
  }
}

/**
 * The extra wait a fault cost: the visitors admitted after it began, against the same visitors (the
 * same seed: the same arrivals) in the same sale without the fault. Sale seconds.
 */
export function extraWait(
  visitors: VisitorRecord[],
  baseline: VisitorRecord[],
  fault: StoreFault,
  scale: number,
): { visitors: number; mean: number; p50: number; p95: number } {
  const base = new Map(baseline.map((v) => [v.id, v]))
  const diffs: number[] = []
  for (const v of visitors) {
    const b = base.get(v.id)
    if (v.admittedReceived === undefined || v.admittedReceived < fault.start || b?.admittedReceived === undefined) continue
    diffs.push(((v.admittedReceived - v.arrivedAt - (b.admittedReceived - b.arrivedAt)) * scale) / 1000)
  }
  diffs.sort((a, b) => a - b)
  return {
    visitors: diffs.length,
    mean: diffs.length === 0 ? Number.NaN : diffs.reduce((a, b) => a + b, 0) / diffs.length,
    p50: percentile(diffs, 50),
    p95: percentile(diffs, 95),
  }
}

export function extraWaitVerdict(w: ReturnType<typeof extraWait>, fault: StoreFault): Verdict {
  const f = (x: number) => (Number.isNaN(x) ? '-' : `${x >= 0 ? '+' : ''}${Math.round(x)} s`)
  return {
    name: `extra wait from the ${fault.kind}`,
    ok: true,
    info: true,
    measured: `${w.visitors} visitors admitted after it: mean ${f(w.mean)}, p50 ${f(w.p50)}, p95 ${f(w.p95)} (simulated)`,
    limit: 'informational',
    detail:
      'Each visitor admitted after the fault began, against the same visitor in the same sale (same seed and arrivals) run without it.',
  }
}

// A scheduled sale (issue #13 §5): the pre-queue's draw, the arrival-rank independence, the network cap,
// and FIFO after the opening.

/** GET /_anteroom/draw after the opening, all pages in one list. */
export interface PublishedDraw {
  room: string
  state: string
  commitment: string | null
  seed?: string
  entrants?: number
  draw: { rank: number; ticket: string; value: string }[]
}

/** The checks of scripts/verify-draw.mjs (node:crypto only): the problems found, none when the draw checks out. */
export function checkDraw(d: PublishedDraw): string[] {
  if (d.state !== 'drawn' || typeof d.seed !== 'string') return [`no seed (state ${d.state})`]
  const problems: string[] = []
  const seed = Buffer.from(d.seed, 'hex')
  if (createHash('sha256').update(seed).digest('hex') !== d.commitment) problems.push('SHA-256(seed) is not the commitment')
  d.draw.forEach((e, i) => {
    const value = createHmac('sha256', seed).update(`${d.room}:${e.ticket}`).digest('hex')
    if (value !== e.value) problems.push(`rank ${e.rank}: the value of ${e.ticket} is not ${e.value}`)
    if (e.rank !== i + 1) problems.push(`entry ${i + 1} has rank ${e.rank}`)
    const before = d.draw[i - 1]
    if (before !== undefined) {
      const [a, b] = [before.value.slice(0, 10), e.value.slice(0, 10)]
      if (a > b || (a === b && before.ticket >= e.ticket)) problems.push(`rank ${e.rank} should come before rank ${before.rank}`)
    }
  })
  if (d.draw.length !== d.entrants) problems.push(`${d.draw.length} entries listed, ${d.entrants} in the draw`)
  return problems
}

/**
 * Drawn visitors the store admitted (strictly) after one ranked later in the draw: the store's record
 * (ticket, admission ms) against the draw's ranks. Admissions in the same ms are not ordered.
 */
export function drawOrderInversions(
  ranks: ReadonlyMap<string, number>,
  admissions: readonly (readonly [string, number])[],
): { count: number; compared: number; example?: [string, string] } {
  const drawn = admissions.filter(([t]) => ranks.has(t)).sort((a, b) => a[1] - b[1])
  let count = 0
  let example: [string, string] | undefined
  let worst: string | undefined
  let worstRank = Number.NEGATIVE_INFINITY
  for (let i = 0; i < drawn.length; ) {
    let j = i
    while (j < drawn.length && drawn[j]![1] === drawn[i]![1]) j++
    for (let k = i; k < j; k++) {
      const [t] = drawn[k]!
      if (ranks.get(t)! < worstRank) {
        count++
        example ??= [t, worst!]
      }
    }
    for (let k = i; k < j; k++) {
      const [t] = drawn[k]!
      if (ranks.get(t)! > worstRank) [worstRank, worst] = [ranks.get(t)!, t]
    }
    i = j
  }
  return { count, compared: drawn.length, example }
}

/** What the simulator saw of a scheduled sale's draw, beside what the edge published. */
export interface DrawObservation {
  /** The commitment published during the pre-queue. */
  commitmentBefore?: string
  /** Every ticket answered "prequeue" (humans and bot places). */
  prequeueTickets: readonly string[]
  /** The ranks visitors were shown after the opening (status draw.rank): [ticket, rank]. */
  shownRanks: readonly (readonly [string, number])[]
  /** The store's record of its admissions: [ticket, ms], the store's clock; and the opening on it. */
  admissions: readonly (readonly [string, number])[]
  opensAt: number
  /** scripts/verify-draw.mjs run on the saved draw. */
  script?: { ok: boolean; output: string }
}

export function drawVerdict(d: PublishedDraw | undefined, o: DrawObservation): Verdict {
  const name = 'pre-queue order = the verified draw'
  const limit = 'checks out; 0 out of order'
  if (d === undefined) return { name, ok: false, measured: 'no draw published', limit, detail: 'GET /_anteroom/draw gave no draw.' }
  const problems = checkDraw(d)
  if (o.commitmentBefore !== undefined && o.commitmentBefore !== d.commitment) problems.push('the commitment changed at the opening')
  const ranks = new Map(d.draw.map((e) => [e.ticket, e.rank]))
  const seen = new Set(o.prequeueTickets)
  const missing = [...seen].filter((t) => !ranks.has(t)).length
  const extra = d.draw.filter((e) => !seen.has(e.ticket)).length
  if (missing > 0) problems.push(`${missing} pre-queue tickets are not in the draw`)
  if (extra > 0) problems.push(`${extra} drawn tickets were never answered prequeue here`)
  const wrongRank = o.shownRanks.filter(([t, r]) => ranks.get(t) !== r).length
  if (wrongRank > 0) problems.push(`${wrongRank} visitors were shown another rank than the published one`)
  const early = o.admissions.filter(([, at]) => at < o.opensAt).length
  if (early > 0) problems.push(`${early} admitted before the opening`)
  const inv = drawOrderInversions(ranks, o.admissions)
  if (inv.count > 0) problems.push(`${inv.count} admitted after a later-ranked one (e.g. ${inv.example?.[0]} after ${inv.example?.[1]})`)
  if (o.script !== undefined && !o.script.ok) problems.push(`verify-draw.mjs: ${o.script.output}`)
  return {
    name,
    ok: problems.length === 0,
    measured:
      problems.length === 0
        ? `${d.draw.length} drawn, seed = commitment, values and order check out${o.script ? ' (and verify-draw.mjs)' : ''}; ${inv.compared} admitted in rank order`
        : problems.slice(0, 3).join('; '),
    limit,
    detail:
      'The published draw checked as scripts/verify-draw.mjs does (SHA-256(seed) = the commitment published in the pre-queue, ' +
      'every value an HMAC of the seed, ascending order, ranks 1..n); its tickets are exactly those answered prequeue; ' +
      'the ranks the visitors were shown are the published ones; the store admitted nobody before the opening and the drawn visitors in rank order (its admission record).',
  }
}

/** Spearman's ρ (ties get their mean rank). */
export function spearman(x: readonly number[], y: readonly number[]): number {
  const rank = (a: readonly number[]) => {
    const order = a.map((v, i) => [v, i] as const).sort((p, q) => p[0] - q[0])
    const r = new Array<number>(a.length)
    for (let i = 0; i < order.length; ) {
      let j = i
      while (j < order.length && order[j]![0] === order[i]![0]) j++
      for (let k = i; k < j; k++) r[order[k]![1]] = (i + j - 1) / 2
      i = j
    }
    return r
  }
  const [rx, ry] = [rank(x), rank(y)]
  const n = x.length
  const mean = (n - 1) / 2
  let [sxy, sxx, syy] = [0, 0, 0]
  for (let i = 0; i < n; i++) {
    const [dx, dy] = [rx[i]! - mean, ry[i]! - mean]
    sxy += dx * dy
    sxx += dx * dx
    syy += dy * dy
  }
  return sxx === 0 || syy === 0 ? 0 : sxy / Math.sqrt(sxx * syy)
}

/** |ρ| between when humans joined the pre-queue and their rank in the draw. */
export function arrivalRankVerdict(joined: readonly { joinedAt: number; rank: number }[], limit = 0.1): Verdict {
  const rho = spearman(
    joined.map((j) => j.joinedAt),
    joined.map((j) => j.rank),
  )
  return {
    name: 'rank independent of pre-queue arrival',
    ok: joined.length >= 2 && Math.abs(rho) < limit,
    measured: `Spearman ρ = ${rho.toFixed(3)} over ${joined.length} humans`,
    limit: `|ρ| < ${limit}`,
    detail:
      'Between when a human joined the pre-queue (first prequeue answer) and their rank in the published draw: arriving earlier must gain nothing.',
  }
}

/** One join: a request without a queue token that could take a new place (with its proof of work, if asked). */
export interface JoinRecord {
  /** The client's /24 (or /56). */
  network: string
  bot: boolean
  /** Wall ms (the store's minute windows are on that clock). */
  sent: number
  received: number
  status: number
  /** It got a place (prequeue, queued or admitted, with a queue token). */
  place: boolean
  /** A 429 that carried Retry-After. */
  retryAfter?: boolean
  /** A visitor back after their queue token lapsed (the edge saw a newcomer). */
  lapsed?: boolean
}

/**
 * The network cap: no network got more than `cap` places in one of the store's minutes (fixed windows
 * of `windowMs`; only joins sent and answered inside one window are certain), and every join refused
 * was a 429 with Retry-After.
 */
export function networkCapVerdict(joins: readonly JoinRecord[], cap: number, windowMs = 60_000): Verdict {
  const name = 'no join above the network cap got a place'
  const counts = new Map<string, number>()
  let worst = 0
  let worstKey = ''
  for (const j of joins) {
    const w = Math.floor(j.sent / windowMs)
    if (!j.place || Math.floor(j.received / windowMs) !== w) continue
    const key = `${j.network} minute ${w}`
    const n = (counts.get(key) ?? 0) + 1
    counts.set(key, n)
    if (n > worst) [worst, worstKey] = [n, key]
  }
  const refused = joins.filter((j) => j.status === 429)
  const bare = refused.filter((j) => j.retryAfter !== true).length
  const bots = joins.filter((j) => j.bot)
  const humansRefused = refused.filter((j) => !j.bot).length
  return {
    name,
    ok: worst <= cap && bare === 0,
    measured:
      `most places for one network in one minute ${worst}${worstKey ? ` (${worstKey.replace(/ minute \d+$/, '')})` : ''}; ` +
      `bots: ${bots.filter((j) => j.place).length} places, ${bots.filter((j) => j.status === 429).length} refused (429) of ${bots.length} joins; ` +
      `humans refused ${humansRefused}${bare > 0 ? `; ${bare} refusals without Retry-After` : ''}`,
    limit: `≤ ${cap} a network a minute; 429 with Retry-After`,
    detail:
      "Places per client network in each of the store's minutes (joins sent and answered within one), from the answers; every refused join must be a 429 with Retry-After.",
  }
}

/**
 * FIFO after the opening: arrivals after it (a server arrival at or after opensAt, µs) granted in
 * arrival order among themselves, and none before a pre-queue visitor who kept polling.
 */
export function fifoAfterOpeningVerdict(visitors: VisitorRecord[], opensAtUs: number, abandonAfterMs = Number.POSITIVE_INFINITY): Verdict {
  const late = visitors.filter((v) => v.serverArrival !== undefined && v.serverArrival >= opensAtUs)
  const drawn = visitors.filter((v) => v.serverArrival !== undefined && v.serverArrival < opensAtUs)
  const among = fifoInversions(late, abandonAfterMs)
  const cross = fifoInversions(visitors, abandonAfterMs).count - among.count - fifoInversions(drawn, abandonAfterMs).count
  return {
    name: 'FIFO after the opening',
    ok: among.count === 0 && cross === 0,
    measured: `${among.count} among ${late.length} later arrivals; ${cross} ahead of the pre-queue`,
    limit: '0; 0',
    detail:
      'Arrivals after the opening (their queue token says so): pairs certainly granted out of arrival order, and pairs where a later arrival was certainly granted before a pre-queue visitor who kept polling.',
  }
}

// --- a room linked to its event: sold out -------------------------------------------------------

/**
 * The event's stock as the simulator read it from the claim gate, the counts every edge reads once a
 * second (ClaimGate.counts), every 250 ms: real ms, and the counts (absent: the gate knew nothing of
 * the event, or could not be read).
 */
export interface GateSample {
  t: number
  free?: number
  held?: number
  sold?: number
}

/**
 * Where the gate's counts say the event ran out, from its samples: `nothingFreeAt`, the first sample of
 * the stretch with nothing free that lasts to the end of the run (the last unit claimed); `soldOutAt`,
 * the first of the stretch with nothing held either (everything sold). Undefined when the event still
 * had something free at the end (or the gate never counted it).
 */
export function sellOut(gate: readonly GateSample[]): { nothingFreeAt: number; soldOutAt?: number } | undefined {
  const known = gate.filter((g) => g.free !== undefined)
  let i = known.length
  while (i > 0 && known[i - 1]!.free! <= 0) i--
  if (i === known.length) return undefined
  let j = known.length
  while (j > i && (known[j - 1]!.held ?? 0) <= 0) j--
  return { nothingFreeAt: known[i]!.t, soldOutAt: j < known.length ? known[j]!.t : undefined }
}

/**
 * Stretches in which the gate said nothing was free, widened by how late an edge can see a change (a
 * reload, plus a margin, and a sample interval before the first sample that saw it): the rate verdict
 * leaves them out (nobody is let in then, by design).
 */
export function nothingFreeStretches(gate: readonly GateSample[], reloadMs: number, sampleMs: number): [number, number][] {
  const out: [number, number][] = []
  let start: number | undefined
  for (const g of gate) {
    if (g.free === undefined) continue
    if (g.free <= 0) start ??= g.t
    else if (start !== undefined) {
      out.push([start - sampleMs, g.t + reloadMs + 500])
      start = undefined
    }
  }
  if (start !== undefined) out.push([start - sampleMs, Number.POSITIVE_INFINITY])
  return out
}

export interface SoldOutInput {
  gate: readonly GateSample[]
  /** When the answer to the last confirmed purchase came back (visitor side), if any. */
  lastSaleAt?: number
  /** The store's record of its admissions, real ms (exact), if it could be read. */
  record?: AdmissionRecord
  /** How often each edge reads the counts (RoomDirectory: 1 s). */
  reloadMs: number
  /** The refresh the edge was given, real ms: a visitor's next poll comes within 1.5 of it (their phase). */
  refreshMs: number
}

const noCounts = (gate: readonly GateSample[]) => gate.every((g) => g.free === undefined)
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/**
 * Visitors told "sold out" within seconds of the last sale. Measured from the last sale (the answer to
 * the last confirm; without one, the gate's first sold-out count): a visitor waiting then must be told
 * (state sold_out) by the time one look of the edge at the counts (a reload) and their next poll (within
 * 1.5 refreshes, at their phase) have passed, plus half a second; a visitor who comes later, on their
 * first answer (within a second of their first request) once that bound has passed.
 */
export function soldOutToldVerdict(visitors: readonly VisitorRecord[], o: SoldOutInput): Verdict {
  const name = 'visitors told sold out after the last sale'
  const boundMs = o.reloadMs + 1.5 * o.refreshMs + 500
  const limit = `those waiting told within a reload + 1.5 refreshes + 0.5 s = ${secs(boundMs)} real; later ones on their first answer`
  const detail =
    'Every visitor who kept polling past their deadline must have been answered state "sold_out" by it (told visitors leave): the last sale (the answer to the last confirm, else the gate\'s first sold-out count) + the bound for those who came before it, else the later of that and their first request + 1 s. Delays from the last sale, or from a later first request.'
  if (noCounts(o.gate)) return { name, ok: false, measured: 'the gate published no counts for the event', limit, detail }
  const out = sellOut(o.gate)
  if (out?.soldOutAt === undefined) {
    const last = o.gate.filter((g) => g.free !== undefined).at(-1)
    return {
      name,
      ok: true,
      info: true,
      measured: `not measured: the event did not sell out (the gate's last count: ${last?.free} free, ${last?.held} held, ${last?.sold} sold)`,
      limit,
      detail,
    }
  }
  const t = o.lastSaleAt ?? out.soldOutAt
  const deadline = (v: VisitorRecord) => Math.max(t + boundMs, v.arrivedAt + 1000)
  const late = visitors.filter(
    (v) =>
      v.admittedReceived === undefined &&
      (v.soldOutToldAt ?? Number.POSITIVE_INFINITY) > deadline(v) &&
      (v.lastPollSent ?? 0) > deadline(v),
  )
  const told = visitors.filter((v) => v.soldOutToldAt !== undefined)
  const delays = (list: VisitorRecord[]) => list.map((v) => Math.max(0, v.soldOutToldAt! - Math.max(t, v.arrivedAt))).sort((a, b) => a - b)
  const before = delays(told.filter((v) => v.arrivedAt <= t))
  const after = delays(told.filter((v) => v.arrivedAt > t))
  const spread = (d: number[]) => (d.length === 0 ? '' : `: p50 ${secs(percentile(d, 50))}, max ${secs(d.at(-1)!)}`)
  return {
    name,
    ok: told.length > 0 && late.length === 0,
    measured:
      told.length === 0
        ? 'nobody was told sold out'
        : `${before.length} waiting at the last sale told${spread(before)}; ${after.length} who came later${spread(after)}; ${late.length} polling past their deadline untold`,
    limit,
    detail,
  }
}

/**
 * Nobody admitted after the last sale, from the store's record of its grants (exact, on its own
 * clock). The last unit is claimed before the last sale (its buyer holds it, then pays); from the
 * claim on nothing is free, and an edge stops granting at its next look at the counts (its rooms'
 * reload, once a second, plus the time a look takes). So also: no grant later than the gate's first
 * nothing-free count + two reloads + 0.5 s, whatever the time buyers take to pay.
 */
export function noAdmissionAfterVerdict(visitors: readonly VisitorRecord[], o: SoldOutInput): Verdict {
  const name = 'nobody admitted after the last sale'
  const limit = `0 grants after the last sale, and 0 later than the first nothing-free count + two reloads + 0.5 s (${secs(2 * o.reloadMs + 500)})`
  const detail =
    "The store's record of its grants, else the visitor side (grants certainly after). Nothing free: the last unit claimed, held or sold from then on. Grants between that count and the last sale are the edge seeing it a reload late; a buyer who pays within a reload could be followed by some."
  if (noCounts(o.gate)) return { name, ok: false, measured: 'the gate published no counts for the event', limit, detail }
  const out = sellOut(o.gate)
  if (out === undefined) return { name, ok: true, info: true, measured: 'not measured: the event did not sell out', limit, detail }
  // An edge's look at the counts is at most a reload period old, plus the time the look itself takes
  // (on a loaded machine up to about as long again).
  const bound = out.nothingFreeAt + 2 * o.reloadMs + 500
  const grants = o.record ?? visitors.filter((v) => v.admittedReceived !== undefined).map((v) => grantInterval(v as VisitorRecord)![0])
  const afterBound = grants.filter((g) => g > bound).length
  const afterSale = o.lastSaleAt === undefined ? 0 : grants.filter((g) => g > o.lastSaleAt!).length
  const last = grants.length === 0 ? undefined : Math.max(...grants)
  return {
    name,
    ok: afterSale === 0 && afterBound === 0,
    measured:
      `${afterSale} after the last sale, ${afterBound} after the bound; the last grant ` +
      (last === undefined ? 'none' : `${secs(last - out.nothingFreeAt)} after nothing was free`) +
      (o.lastSaleAt === undefined ? '' : `, the last sale ${secs(o.lastSaleAt - out.nothingFreeAt)} after it`) +
      ` (${o.record ? 'store record' : 'visitor side'})`,
    limit,
    detail,
  }
}
