// The looks at a room that the wait estimate (core/eta.ts) starts from. Every edge reads what it needs
// once a second per room, with the watch it already makes (RoomDirectory, QueueStore.watch): the pace,
// the line's length, session expiries sampled by rank, the expiries of a few sessions it follows, the
// running totals of admitted and dropped visitors and of polls. From consecutive looks (observeLine) it
// learns how many sessions renew at their turn instead of ending (and when, and for how long), how fast
// waiting visitors give up, and how much of the pace the line really gets (grants happen only on polls):
// a LineSnapshot, which forecastLine (core/eta.ts) turns into grant schedules.
import type { RoomWatch, WatchLook } from '../ports/queue-store.js'
import { emissionIntervalUs } from './admission.js'
import type { RoomSettings } from './settings.js'

/** Session expiries sampled at each look, by rank, besides the last. */
export const EXPIRY_SAMPLES = 16
/** How long the drops the looks observed are remembered: a decay time, ms. */
const MEMORY_MS = 120_000
/** Most sessions followed from look to look, to see whether they renew. */
export const FOLLOWED = 64
/** Followed sessions that reached their turn before the share of renewals is taken from them. */
const MIN_TURNS = 4
/** The window of admittedLastMinute. */
export const MINUTE_MS = 60_000
/** How far back the poll rate is measured. */
const POLL_RATE_MS = 3000

/** What a forecast starts from: one look at a room, and what the looks before it taught. */
export interface LineSnapshot {
  /** When the look was taken, store ms. */
  at: number
  waiting: number
  active: number
  /** Session expiries [rank, ms] by rank, ascending (the last rank is active - 1). */
  expiries: readonly (readonly [number, number])[]
  lastSlotUs: number | null
  reserved: number
  reservedUntil: number
  /** Of the sessions that reached their turn, the share that renewed instead of ending... */
  renewShare: number
  /** ...and how much later a renewed one then ended, on average (ms)... */
  extendMs: number
  /** ...and how long before its expiry each renewed (ms), ascending: when renewals come in a turn. */
  renewLeadsMs: readonly number[]
  /** Waiting visitors dropped for not polling, per waiting visitor and second. */
  dropRate: number
  /** Polls the store answered per second lately (grants happen only on polls). */
  pollRate: number
  /** The share of the pace the line gets, as measured lately (1 until it can be). */
  paceShare: number
  /** The admitted total and more at this and recent looks (store ms), oldest first, a minute back. */
  admittedAt: readonly Look[]
}

/** A look's time (store ms), the admitted total then, the polls answered in the room's life by then, who waited, the free slots. */
export type Look = readonly [at: number, admitted: number, polls: number, waiting: number, free: number]

/** The looks at a room so far, as the edge keeps them. */
export interface LineObservation {
  snapshot: LineSnapshot
  /** Which life of the room the totals count (a new life starts them again). */
  epoch: number | undefined
  abandoned: number
  /** Decaying sums: visitors dropped, and waiting visitors × seconds. */
  dropped: number
  exposure: number
  /** Sessions followed from look to look: visitor → their expiry when last seen (ms). */
  followed: ReadonlyMap<string, number>
  /** Decaying counts of followed sessions at their turn: renewed, and ended; and the ms the renewals added. */
  renewed: number
  ended: number
  extended: number
  /** How long before their expiry the latest renewals came (ms). */
  leads: readonly number[]
  /** The share of the pace last measured, and when. */
  pace: { share: number; at: number } | undefined
}

/**
 * What the next look samples: ranks spread over the active set as the last look saw it, and the last
 * one; and the sessions followed (in their order, which observeLine reads the answer in).
 */
export function lookFor(prev: LineObservation | undefined): WatchLook {
  const active = prev?.snapshot.active ?? 0
  const ranks = new Set<number>([0])
  for (let i = 1; i < EXPIRY_SAMPLES && active > 1; i++) ranks.add(Math.round((i * (active - 1)) / (EXPIRY_SAMPLES - 1)))
  return { ranks: [...ranks, -1], visitors: prev === undefined ? [] : [...prev.followed.keys()] }
}

/**
 * The index of the last [rank, expiry] sample whose field `at` (0: rank, 1: expiry) is at most `x`
 * (0 when none is): both are ascending. A binary search.
 */
function lastAtOrBelow(e: readonly (readonly [number, number])[], at: 0 | 1, x: number): number {
  let lo = 0
  let hi = e.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if ((e[mid] as readonly [number, number])[at] <= x) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** How many of the active set's entries expire by `t` (ms), interpolated between the sampled ranks. */
export function expiredBy(s: Pick<LineSnapshot, 'active' | 'expiries'>, t: number): number {
  const e = s.expiries
  const first = e[0]
  if (first === undefined || t < first[1]) return 0
  const lo = lastAtOrBelow(e, 1, t)
  const [ra, ea] = e[lo] as readonly [number, number]
  const next = e[lo + 1]
  if (next === undefined) return Math.min(s.active, ra + 1)
  const [rb, eb] = next
  return ra + 1 + ((rb - ra - 1) * (t - ea)) / (eb - ea)
}

/** The expiry of the entry at `rank` (fractional ranks too), interpolated between the sampled ranks. */
export function expiryAt(e: readonly (readonly [number, number])[], rank: number): number {
  const lo = lastAtOrBelow(e, 0, rank)
  const [ra, ea] = e[lo] as readonly [number, number]
  const next = e[lo + 1]
  if (next === undefined || rank <= ra) return ea
  const [rb, eb] = next
  return ea + ((eb - ea) * (rank - ra)) / (rb - ra)
}

/**
 * One more look at a room (`at`, store ms; `w` answers lookFor(prev)): the snapshot to forecast from,
 * and what the looks so far say about how sessions and visitors behave.
 *
 * Renewals: the look follows a few sessions sampled by rank, from when they are seen until their turn
 * comes (the expiry they had then): a session renewed by then has a later expiry (by how much is the
 * extension), and is followed to its next turn; one that ended has none, or the same (not swept yet).
 * A session gone before its turn was ended by an admin, and does not count. Counting both at the turn
 * keeps renewals (which come earlier, from half a session on) from being counted before the ends.
 * Only entries whose expiry is more than abandonAfter away are taken up: an admission not yet
 * collected expires abandonAfter after its visitor's last poll, and its collection is no renewal.
 * Turns are sampled uniformly, so the share that renewed is the chance that a session renews at its
 * turn, as the forecast takes it (each one independently).
 *
 * Drops: visitors dropped for not polling (the running total) per waiting visitor and second.
 */
export function observeLine(prev: LineObservation | undefined, w: RoomWatch, at: number, room: RoomSettings): LineObservation {
  const sessionMs = room.sessionDurationSeconds * 1000
  const epoch = w.life?.epoch
  const same = prev !== undefined && prev.epoch === epoch && at > prev.snapshot.at
  const keep = MINUTE_MS + 2000
  const history: Look[] = [
    ...(same ? prev.snapshot.admittedAt.filter(([t]) => t >= at - keep) : []),
    [at, w.admitted, w.life?.seq ?? 0, w.waiting, room.totalActiveUsers - w.active - w.reserved],
  ]
  const decay = same ? Math.exp(-(at - prev.snapshot.at) / MEMORY_MS) : 0
  let renewed = same ? prev.renewed * decay : 0
  let ended = same ? prev.ended * decay : 0
  let extended = same ? prev.extended * decay : 0
  const followed = new Map<string, number>()
  const leads = same ? [...prev.leads] : []
  if (same) {
    let i = 0
    for (const [visitor, turn] of prev.followed) {
      const now = w.tracked[i++]
      if (at < turn) {
        // Before its turn: a renewal is counted when the turn comes; a session gone already was ended by an admin.
        if (now !== null && now !== undefined) followed.set(visitor, turn)
      } else if (now === null || now === undefined || now <= turn) ended++
      else {
        renewed++
        extended += now - turn
        // Renewed at now - session, which was this long before the turn.
        leads.push(Math.min(sessionMs, Math.max(0, sessionMs - (now - turn))))
        followed.set(visitor, now)
      }
    }
  }
  for (const [, expiry, visitor] of w.expiries) {
    if (followed.size >= FOLLOWED) break
    if (expiry > at + room.abandonAfterSeconds * 1000 + 1000 && !followed.has(visitor)) followed.set(visitor, expiry)
  }
  // The share of the pace measured now, or lately (while the line is short or the room full, it cannot be).
  const measured = measuredPace(history, room)
  const pace = measured !== undefined ? { share: measured, at } : same && prev.pace && at - prev.pace.at < MINUTE_MS ? prev.pace : undefined
  const renewShare = renewed + ended >= MIN_TURNS ? Math.min(0.9, renewed / (renewed + ended)) : 0
  let { dropped, exposure } = same ? prev : { dropped: 0, exposure: 0 }
  if (same) {
    const before = prev.snapshot
    dropped = dropped * decay + Math.max(0, w.abandoned - prev.abandoned)
    exposure = exposure * decay + ((before.waiting + w.waiting) / 2) * ((at - before.at) / 1000)
  }
  const snapshot: LineSnapshot = {
    at,
    waiting: w.waiting,
    active: w.active,
    expiries: w.expiries.map(([rank, expiry]) => [rank, expiry] as const),
    lastSlotUs: w.lastSlotUs,
    reserved: w.reserved,
    reservedUntil: w.reservedUntil,
    renewShare,
    extendMs: renewed > 0.5 ? extended / renewed : sessionMs / 2,
    renewLeadsMs: leads.slice(-FOLLOWED).sort((a, b) => a - b),
    dropRate: exposure > 0 ? dropped / exposure : 0,
    pollRate: pollRate(history),
    paceShare: pace?.share ?? 1,
    admittedAt: history,
  }
  return {
    snapshot,
    epoch,
    abandoned: w.abandoned,
    dropped,
    exposure,
    followed,
    renewed,
    ended,
    extended,
    leads: leads.slice(-FOLLOWED),
    pace,
  }
}

/**
 * The share of the pace the line really got lately: grants happen only on polls, and visitors who
 * arrived together poll together, a refresh apart; when no poll comes for longer than the pace's credit
 * (a second), the time beyond is lost (core/admission.ts). Measured over the last two refreshes (or
 * as long as ten grants take, up to a minute), while the line never ran short (at least a refresh's
 * worth of grants waiting) and never filled the room.
 */
function measuredPace(history: readonly Look[], room: RoomSettings): number | undefined {
  const interval = emissionIntervalUs(room.newUsersPerMinute) / 1000
  const refresh = room.refreshSeconds * 1000
  const window = Math.min(MINUTE_MS, Math.max(2000, 2 * refresh, 10 * interval))
  const last = history[history.length - 1] as Look
  const looks = history.filter(([t]) => t >= last[0] - window - 500)
  const from = looks[0] as Look
  if (last[0] - from[0] < 0.8 * window) return undefined
  if (looks.some(([, , , waiting, free]) => waiting < Math.max(3, refresh / interval) || free < 1)) return undefined
  // Paced grants come evenly: within two of the whole pace (the window's edges), it is the whole pace.
  const expected = (last[0] - from[0]) / interval
  const share = (last[1] - from[1]) / expected
  if (expected < 8) return undefined
  return share >= 1 - 2 / expected ? 1 : Math.max(0.2, share)
}

/** Polls per second over the last few seconds of looks. */
function pollRate(history: readonly Look[]): number {
  const last = history[history.length - 1] as Look
  const from = history.find(([t]) => t >= last[0] - POLL_RATE_MS) as Look
  return last[0] > from[0] ? ((last[2] - from[2]) * 1000) / (last[0] - from[0]) : 0
}

/** The admitted total at `t`, between the looks that saw it. */
export function admittedBy(history: readonly Look[], t: number): number {
  let before = history[0] as Look
  for (const look of history) {
    if (look[0] >= t) {
      if (look[0] === before[0]) return look[1]
      return before[1] + ((look[1] - before[1]) * (t - before[0])) / (look[0] - before[0])
    }
    before = look
  }
  return before[1]
}

/** A look at a room that nobody has taken yet: nothing active, nobody waiting, no pace. */
export function emptySnapshot(at: number): LineSnapshot {
  return {
    at,
    waiting: 0,
    active: 0,
    expiries: [],
    lastSlotUs: null,
    reserved: 0,
    reservedUntil: 0,
    renewShare: 0,
    extendMs: 0,
    renewLeadsMs: [],
    dropRate: 0,
    pollRate: 0,
    paceShare: 1,
    admittedAt: [],
  }
}
