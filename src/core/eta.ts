// The wait a visitor is shown (the queue page, the status JSON, the admin's "back of the line"): when
// the line will reach them, from how it really moves. The line moves by grants, and a grant needs two
// things (core/admission.ts): the pace must have made it due (one per emission interval, at most
// perSecondCap in any second) and a slot must be free (totalActiveUsers; a slot frees when a session's
// expiry passes without a renewal). So the estimate for place p is the time of the p-th grant from now
// under both: slots free now, then freeing at the sessions' expiries, then each granted slot held for
// about a session before it frees again. It holds from the first admission, and when the room is full
// the line moves as fast as sessions end, not at the configured rate.
//
// Every edge looks at each room once a second; from consecutive looks, observeLine learns how sessions
// renew, how fast waiting visitors give up and how much of the pace the line really gets (all of that is
// core/line-observation.ts, re-exported here). forecastLine turns one look into grant schedules (once
// per look, when somebody asks); estimateWait reads a visitor's wait off them, with no store call.
import { dueAdmissions, emissionIntervalUs, perSecondCap } from './admission.js'
import { admittedBy, expiredBy, expiryAt, type LineSnapshot, type Look, MINUTE_MS } from './line-observation.js'
import { nextPollMs, onPoll } from './polling.js'
import type { RoomSettings } from './settings.js'

export {
  admittedBy,
  EXPIRY_SAMPLES,
  emptySnapshot,
  expiredBy,
  FOLLOWED,
  type LineObservation,
  type LineSnapshot,
  lookFor,
  observeLine,
} from './line-observation.js'

/** Most grants a forecast works out one by one; past them it goes on at the steady rate. */
export const MAX_FORECAST = 20_000
/** Most expiries a forecast keeps apart; more are taken in equal bunches. */
const MAX_EXPIRY_EVENTS = 4096

/** A visitor's wait: the estimate and a range around it, seconds. */
export interface WaitEstimate {
  seconds: number
  low: number
  high: number
}

/** How the sessions behave in one forecast, and how much of the pace the line gets. */
interface Plan {
  paceShare: number
  /** Added to every current expiry (the high end: each session renews once more). */
  shiftMs: number
  /** From a grant until its slot frees, when nobody renews. */
  holdMs: number
  /** The share of sessions that renew at each expiry, and how much later a renewed one ends. */
  renew: number
  extendMs: number
}

/** The times (store ms) of the next grants from the look on; past `count`, one every `tailMs`. */
interface Schedule {
  times: Float64Array
  count: number
  tailMs: number
}

/**
 * The grants from the look on, one by one, as the rule makes them (core/admission.ts): each at the
 * first time the pace has made it due (one emission interval after the last slot, at most one second of credit),
 * no more than perSecondCap in any second, and a slot is free. Slots come as an amount: the free ones,
 * each live session's at its expiry (or, for the share that renews, one or more renewals later), the
 * reserved ones when the reservation ends, and each grant's own slot a hold later.
 */
function schedule(s: LineSnapshot, room: RoomSettings, plan: Plan, count: number): Schedule {
  const interval = emissionIntervalUs(room.newUsersPerMinute) / 1000 / plan.paceShare
  const cap = perSecondCap(room.newUsersPerMinute)
  const start = s.at
  const q = Math.min(0.9, Math.max(0, plan.renew))
  const levels = q > 0.001 ? 4 : 1
  const mass = Array.from({ length: levels }, (_, m) => (m < levels - 1 ? q ** m * (1 - q) : q ** m))
  // After a first renewal, the later turns as for any session.
  const later = mass.map((_, m) => (m === 0 ? 0 : (mass[m] as number) / q))
  const session = room.sessionDurationSeconds * 1000
  const leads = s.renewLeadsMs
  // The live sessions' expiries, in bunches of equal size when there are many. A session that has not
  // renewed although its turn is close may yet, only if renewals come that late: the chance is q
  // among the renewers whose renewal is still ahead (Bayes), 0 past them all.
  const stillAhead = (remaining: number) => {
    if (leads.length === 0) return remaining >= session / 2 ? 1 : 0
    let n = 0
    while (n < leads.length && (leads[n] as number) < remaining) n++
    return n / leads.length
  }
  const firstLive = Math.min(s.active, Math.ceil(expiredBy(s, start)))
  const live = s.active - firstLive
  const bunches = Math.min(live, MAX_EXPIRY_EVENTS)
  const bunch = bunches > 0 ? live / bunches : 0
  const expiries = new Float64Array(bunches)
  const endsNow = new Float64Array(bunches)
  const renews = new Float64Array(bunches)
  for (let j = 0; j < bunches; j++) {
    const rank = firstLive + (bunch === 1 ? j : (j + 0.5) * bunch - 0.5)
    const expiry = Math.max(start, expiryAt(s.expiries, rank))
    expiries[j] = expiry + plan.shiftMs
    const f = q > 0 ? stillAhead(expiry - start) : 0
    const renew = f > 0 ? (q * f) / (1 - q + q * f) : 0
    endsNow[j] = bunch * (1 - renew)
    renews[j] = bunch * renew
  }
  const reserving = s.reserved > 0 && s.reservedUntil > start
  let reserved = reserving ? s.reserved : 0
  let free = room.totalActiveUsers - reserved - live
  const times = new Float64Array(count)
  const expiryHead = new Int32Array(levels)
  const grantHead = new Int32Array(levels)
  // When the next admission is due (dueAdmissions: the last slot and an interval, or a second's credit).
  let due = s.lastSlotUs === null ? start - 1000 : Math.max(s.lastSlotUs / 1000 + interval, start - 1000)
  let prev = start
  let slot = start
  for (let k = 0; k < count; k++) {
    while (free < 1 - 1e-9) {
      let best = Number.POSITIVE_INFINITY
      let kind = -1
      let level = 0
      for (let m = 0; m < levels; m++) {
        const e = expiryHead[m] as number
        if (e < bunches && (expiries[e] as number) + m * plan.extendMs < best) {
          best = (expiries[e] as number) + m * plan.extendMs
          kind = 0
          level = m
        }
        const g = grantHead[m] as number
        if (g < k && (times[g] as number) + plan.holdMs + m * plan.extendMs < best) {
          best = (times[g] as number) + plan.holdMs + m * plan.extendMs
          kind = 1
          level = m
        }
      }
      if (reserved > 0 && s.reservedUntil < best) {
        best = s.reservedUntil
        kind = 2
      }
      // No slot will ever free (a room with no room at all): no more grants.
      if (kind < 0) return { times, count: k, tailMs: Number.POSITIVE_INFINITY }
      if (kind === 0) {
        const e = expiryHead[level] as number
        free += level === 0 ? (endsNow[e] as number) : (renews[e] as number) * (later[level] as number)
        expiryHead[level] = e + 1
      } else if (kind === 1) {
        free += mass[level] as number
        grantHead[level] = (grantHead[level] as number) + 1
      } else {
        free += reserved
        reserved = 0
      }
      slot = best
    }
    let t = Math.max(prev, slot, due)
    if (k >= cap) t = Math.max(t, (times[k - cap] as number) + 1000)
    times[k] = t
    due = Math.max(due, t - 1000) + interval
    free -= 1
    prev = t
  }
  // Past the grants worked out: the steady rate, the pace or the slots cycling, whichever is slower.
  const hold = plan.holdMs + (q > 0 ? (plan.extendMs * q) / (1 - q) : 0)
  const tailMs = room.totalActiveUsers > 0 ? Math.max(interval, hold / room.totalActiveUsers) : Number.POSITIVE_INFINITY
  return { times, count, tailMs }
}

/** The grant schedules worked out from one look: the estimate, and the two ends of the range. */
export interface LineForecast {
  at: number
  waiting: number
  /** The admitted total at recent looks, the look's last. */
  admittedAt: readonly Look[]
  pollRate: number
  intervalMs: number
  cap: number
  newUsersPerMinute: number
  /** The pace's last slot at the look, µs (null: none yet). */
  lastSlotUs: number | null
  refreshMs: number
  dropRate: number
  point: Schedule
  low: Schedule
  high: Schedule
}

/**
 * Forecasts the room's grants from a look. The estimate: sessions end at their expiry, or renew as
 * the looks saw them renew (each renewal half a session later), and a granted slot is held a session
 * from when its visitor collects the admission (half a refresh on average). The low end: nobody
 * renews, a slot is held exactly a session. The high end: every session renews once more (its slot
 * frees a session after its expiry), and a granted slot is held two sessions and a refresh.
 */
export function forecastLine(s: LineSnapshot, room: RoomSettings): LineForecast {
  const session = room.sessionDurationSeconds * 1000
  const refresh = room.refreshSeconds * 1000
  const count = Math.min(MAX_FORECAST, s.waiting + 1024)
  const renewed = { renew: s.renewShare, extendMs: s.extendMs }
  return {
    at: s.at,
    waiting: s.waiting,
    admittedAt: s.admittedAt,
    pollRate: s.pollRate,
    intervalMs: emissionIntervalUs(room.newUsersPerMinute) / 1000,
    cap: perSecondCap(room.newUsersPerMinute),
    newUsersPerMinute: room.newUsersPerMinute,
    lastSlotUs: s.lastSlotUs,
    refreshMs: refresh,
    dropRate: s.dropRate,
    point: schedule(s, room, { paceShare: s.paceShare, shiftMs: 0, holdMs: session + refresh / 2, ...renewed }, count),
    low: schedule(s, room, { paceShare: 1, shiftMs: 0, holdMs: session, renew: 0, extendMs: 0 }, count),
    high: schedule(s, room, { paceShare: s.paceShare, shiftMs: session, holdMs: 2 * session + refresh, ...renewed }, count),
  }
}

/** How many of the schedule's grants are due by `t`. */
function grantsBy(s: Schedule, t: number): number {
  let lo = 0
  let hi = s.count
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((s.times[mid] as number) <= t) lo = mid + 1
    else hi = mid
  }
  if (lo === s.count && s.count > 0 && Number.isFinite(s.tailMs)) lo += Math.floor((t - (s.times[s.count - 1] as number)) / s.tailMs)
  return lo
}

/** The time of the schedule's n-th grant (1-based; fractional n in between); null if it never comes. */
function timeOf(s: Schedule, n: number): number | null {
  if (s.count === 0) return null
  if (n <= 1) return s.times[0] as number
  if (n <= s.count) {
    const a = Math.floor(n)
    const b = Math.ceil(n)
    const ta = s.times[a - 1] as number
    return ta + ((s.times[b - 1] as number) - ta) * (n - a)
  }
  if (!Number.isFinite(s.tailMs)) return null
  return (s.times[s.count - 1] as number) + (n - s.count) * s.tailMs
}

/** What a queued visitor's poll answered, which their estimate starts from. */
export interface QueuedPoll {
  /** The place's arrival, µs: its polls' phase (core/polling.ts). */
  arrival: number
  position: number
  waiting: number
  admittedLastMinute: number
  /** Store ms. */
  now: number
}

/**
 * How many grants there were between the look and the poll: the admitted total then and now. The
 * total now is the minute's admissions the poll reports plus the total a minute ago, between the
 * looks that saw it; undefined if the looks do not reach that far back (an edge that started mid-sale).
 */
function grantsSinceLook(f: LineForecast, poll: QueuedPoll): number | undefined {
  const first = f.admittedAt[0]
  const last = f.admittedAt[f.admittedAt.length - 1]
  if (first === undefined || last === undefined) return undefined
  if (first[1] > 0 && first[0] > poll.now - MINUTE_MS) return undefined
  return Math.max(0, Math.round(poll.admittedLastMinute + admittedBy(f.admittedAt, poll.now - MINUTE_MS) - last[1]))
}

/**
 * What the line loses when it is short: grants happen only on polls, and the pace keeps at most a
 * second of credit (core/admission.ts), so when no poll comes for longer than that, the time beyond
 * is lost. Polls come from those waiting (each every refresh) and from newcomers (per ms); taken as
 * random (rate λ), a grant takes on average I + e^(−λ·1 s)/λ when the interval I is a second or more,
 * and I / (1 − e^(−λ·w)) when several fit in the credit (w: a second and half an interval). Returns
 * the extra ms until the visitor's grant, the line shrinking as it goes.
 */
function shortLineMs(position: number, waiting: number, newcomers: number, f: LineForecast): number {
  const { refreshMs, intervalMs } = f
  let extra = 0
  for (let j = position - 1; j >= 0; j--) {
    const lambda = newcomers + Math.max(1, waiting - j) / refreshMs
    const lost =
      intervalMs >= 1000 ? Math.exp(-lambda * 1000) / lambda : intervalMs / (1 - Math.exp(-lambda * (1000 + intervalMs / 2))) - intervalMs
    // Longer lines lose less; past a thousandth of an interval, nothing worth counting.
    if (lost < intervalMs / 1000) break
    extra += lost
  }
  return extra
}

/**
 * The wait of the visitor at `poll.position` at `poll.now` (store ms), from a forecast: their grant
 * is the position-th after the grants since the look (from the admitted totals; without them, those
 * the forecast expected by now, no more than were waiting at the look). Those ahead who stop polling
 * leave the line at the rate the looks saw (the low end: twice that; the high end: nobody leaves). The
 * pace has at most perSecondCap of credit, less what went since the look, however old the look; and a
 * short line loses time between polls (the estimate and the high end). With `polls` (a visitor who
 * polls at their place's phase, every refreshSeconds: core/polling.ts), the wait ends at the first of
 * their polls at or after their grant, and the range has a poll of slack either way; without, whole seconds.
 */
export function estimateWait(f: LineForecast, poll: QueuedPoll, polls = true): WaitEstimate | null {
  const { position, now } = poll
  const since = grantsSinceLook(f, poll)
  const credit = Math.max(0, f.cap - (since ?? 0), owedSlots(f, since, now))
  // Newcomers poll too: the polls the looks saw beyond those of the line, or the arrivals since the look.
  const waiting = Math.max(position, poll.waiting)
  const arrived = since === undefined ? 0 : (waiting + since - f.waiting) / Math.max(500, now - f.at)
  const newcomers = Math.max(0, f.pollRate / 1000 - waiting / f.refreshMs, arrived)
  const short = shortLineMs(position, waiting, newcomers, f)
  const point = waitOn(f.point, f.dropRate, short, f, since, position, now, credit)
  if (point === null) return null
  const low = waitOn(f.low, 2 * f.dropRate, 0, f, since, position, now, credit) ?? point
  const high = waitOn(f.high, 0, short, f, since, position, now, credit) ?? Number.POSITIVE_INFINITY
  const next = nextPollMs(poll.arrival, now, f.refreshMs)
  const s = waitSeconds(point, polls, next, f.refreshMs)
  // The range: the two ends of the forecast, a poll of slack either way (a visitor's timer drifts, and
  // a grant near one of their polls may fall either side of it), and at least a fifth either way.
  const slack = polls ? f.refreshMs : 0
  const hi = Number.isFinite(high) ? waitSeconds(high + slack, polls, next, f.refreshMs) : s
  return {
    seconds: s,
    low: Math.min(Math.floor(0.8 * s), waitSeconds(low - slack, polls, next, f.refreshMs)),
    high: Math.max(Math.ceil(1.2 * s), hi),
  }
}

/**
 * What the pace owes at `now` (core/admission.ts paceAfter: what the per-second cap held back stays
 * due), by the rule's own dueAdmissions: the grants since the look took the slots from the look's
 * first due one on; what is due after the last of them, no more than perSecondCap. 0 when the grants
 * since the look are not known.
 */
function owedSlots(f: LineForecast, since: number | undefined, now: number): number {
  if (since === undefined) return 0
  const n = f.newUsersPerMinute
  const first = dueAdmissions(f.lastSlotUs ?? undefined, f.at * 1000, n).fromUs
  return Math.min(f.cap, dueAdmissions(first + (since - 1) * emissionIntervalUs(n), now * 1000, n).due)
}

/** estimateWait's wait (ms) on one schedule, `extra` added; null if the grant never comes. Module-level: no closure per poll. */
function waitOn(
  s: Schedule,
  dropRate: number,
  extra: number,
  f: LineForecast,
  since: number | undefined,
  position: number,
  now: number,
  credit: number,
): number | null {
  const done = since ?? Math.min(f.waiting, grantsBy(s, now))
  let at = timeOf(s, done + position)
  if (at === null) return null
  let ahead = position
  if (dropRate > 0 && at > now) {
    // The line ahead shrinks by grants and by drops: x' = -rate - dropRate·x.
    const x = (dropRate * (at - now)) / 1000
    ahead = (position * Math.log1p(x)) / x
    at = timeOf(s, done + ahead) as number
  }
  return Math.max(at, now + Math.max(0, ahead - credit) * f.intervalMs) + extra - now
}

/** A wait in whole seconds: to the visitor's poll at or after it (`polls`), else rounded up. */
function waitSeconds(ms: number, polls: boolean, next: number, refreshMs: number): number {
  return polls ? Math.max(1, Math.round(onPoll(ms, next, refreshMs) / 1000)) : Math.max(1, Math.ceil(ms / 1000 - 1e-9))
}
