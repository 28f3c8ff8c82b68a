// The admission rule, once: what one poll of a room does, step by step, and how many the room may
// admit. The embedded store (adapters/memory) runs pollRoom on its own sets; the test model and the
// simulator's prediction use grantBudget. adapters/redis/lua/poll-12.lua is the same rule in Lua, for
// Redis, and keeps these steps in this order; test/differential.test.ts drives both with the same
// random operations and compares every answer.
import { isDrawnArrival } from './draw.js'
import { CATCH_UP_US, dueAdmissions, grantBudget, paceAfter } from './pace.js'
import type { AdmissionLimits } from './settings.js'

// The pace and the budget are core/pace.ts; re-exported here, as the rule's own.
export { type BudgetInput, CATCH_UP_US, dueAdmissions, emissionIntervalUs, grantBudget, paceAfter, perSecondCap } from './pace.js'

/** Most visitors one poll admits or drops; the rest wait for the next poll. */
export const MAX_STEP = 500
/** Waiting visitors are spread over this many "seen" buckets by seenBucketOf. */
export const SEEN_BUCKETS = 16384
/** Most seen buckets one poll checks for visitors who stopped polling. */
export const MAX_SWEEP = 16
export const MINUTE_MS = 60_000
export const TEN_SECONDS_MS = 10_000
/** An admin's "end session" keeps that visitor out this long, unless an admin lets them in again. */
export const ENDED_KEEP_MS = 24 * 3600_000
/** A scheduled room's draw is kept this long after its opening (Redis; the embedded store keeps it). */
export const DRAWN_KEEP_MS = 7 * 24 * 3600_000
/** recoveryMs: two refreshes (ms per second of refreshSeconds), and a second more. */
export const RECOVERY_MS_PER_REFRESH_SECOND = 2000
export const RECOVERY_EXTRA_MS = 1000
/** collectWindowMs: one and a half refreshes (ms per second of refreshSeconds). */
export const COLLECT_MS_PER_REFRESH_SECOND = 1500

/**
 * After the store forgot a room, nobody is admitted for two refreshes and a second: long enough for
 * every visitor who keeps polling to be back at the arrival in their token before the first grant.
 */
export function recoveryMs(refreshSeconds: number): number {
  return refreshSeconds * RECOVERY_MS_PER_REFRESH_SECOND + RECOVERY_EXTRA_MS
}

/**
 * An absent visitor granted a slot has until abandonAfter after their last poll to collect it, and at
 * least this long after the grant: a visitor who keeps polling polls again within one and a half
 * refreshes (core/polling.ts), even if the store missed their last polls.
 */
export function collectWindowMs(refreshSeconds: number): number {
  return refreshSeconds * COLLECT_MS_PER_REFRESH_SECOND
}

/** The seen bucket of a visitor (bucketOf in poll-12.lua). */
export function seenBucketOf(visitor: string): number {
  let h = 0
  for (let i = 0; i < visitor.length; i++) h = (h * 31 + visitor.charCodeAt(i)) % SEEN_BUCKETS
  return h
}

/** A sorted set as the rule needs it: members ordered by (score, member), as in Redis. */
export interface ScoredSet {
  readonly size: number
  score(member: string): number | undefined
  /** ZADD: sets the score. */
  add(member: string, score: number): void
  remove(member: string): boolean
  /** 0-based rank. */
  rank(member: string): number | undefined
  first(count: number): string[]
  /** Members with score >= min (ZCOUNT min +inf). */
  countFrom(min: number): number
  /** ZREMRANGEBYSCORE -inf max (all of them, when no limit). */
  removeUpTo(max: number, limit?: number): string[]
  /** ZRANGEBYSCORE -inf max LIMIT 0 limit, without removing. */
  upTo(max: number, limit: number): string[]
}

/** A room's state, as the Lua keeps it in Redis (docs/redis-keys.md). */
export interface RoomState {
  /** visitor → arrival µs. */
  line: ScoredSet
  /** seen bucket (as a string) → when its oldest entry goes stale, ms. */
  sweep: ScoredSet
  /** visitor → session expiry ms (an admission not yet collected: abandonAfter after the last poll). */
  active: ScoredSet
  /** "visitor:ms" → admission ms, the last 60 s. */
  admissions: ScoredSet
  /** visitor → until when their place in line is used up by an admission, ms (a token's arrival no longer counts). */
  used: ScoredSet
  /** visitor → when an admin ended their session, ms (they get no place until it is cleared). */
  ended: ScoredSet
  /** A scheduled room's draw: visitor → drawn arrival µs, for everyone who got a drawn place (core/draw.ts). */
  drawn: ScoredSet
  /** The slot of the last admission on the room's timeline, µs (dueAdmissions); undefined before the first. */
  lastSlotUs: number | undefined
  /** The room's life in this store: a marker that only a loss removes (undefined until the first poll). */
  life: Life | undefined
  /** The seen buckets: visitor → last poll ms, waiting visitors only. */
  seen(bucket: number): Map<string, number>
  /** The last arrival handed out, µs. */
  lastArrival: number
  admitted: number
  abandoned: number
  /** Visitors dropped per 10-s bucket. */
  abandonedBy: Map<number, number>
}

/**
 * A store's memory of a room, from its first poll on. When a poll finds none although a visitor
 * brings a queue token or the edge saw a life before, the store has forgotten the room (a flush, a
 * restart, a failover to a replica that missed writes): the new life starts recovering.
 */
export interface Life {
  /** This life's id (the µs it began): edges notice a new one within a second. */
  epoch: number
  /** When it began, ms: admissions issued before it are re-registered once. */
  born: number
  /** No admissions until then, ms. */
  recoverUntil: number
  /** Slots kept for sessions admitted before the loss that have not come back yet... */
  reserved: number
  /** ...until then, ms (after a session length no such admission can still be valid). */
  reservedUntil: number
  /** Polls answered in this life. A store that has fewer than an edge saw went back in time. */
  seq: number
  /** The latest outage an edge reported (EdgeHint.outage), and until when the line is held for it, ms. */
  outage: number
  holdUntil: number
  /** The most lateness an edge reported (EdgeHint.late), ms, and until when it counts (lateSlack). */
  late: number
  lateUntil: number
}

/** What every poll answer says of the room's life, so that edges can tell when the store goes back in time. */
export interface LifeMark {
  epoch: number
  born: number
  seq: number
}

/** What the edge that sends a poll knows of the room: the life it saw, and how many were active then. */
export interface EdgeHint {
  epoch?: number
  active: number
  /** The highest seq this edge saw in that life. */
  seq?: number
  /**
   * When this edge last failed to reach the store (its clock, ms; for a few minutes after): its
   * visitors kept polling meanwhile, answered busy, and the store did not see them (holdLine).
   */
  outage?: number
  /**
   * How late this edge serves its visitors' polls now, ms (core/lateness.ts), when it is: the sweep
   * then allows that much more silence (lateSlack). Absent or 0 for an edge that keeps up.
   */
  late?: number
}

export interface Poll {
  visitor: string
  /** Arrival µs from a verified queue token: restores a place the store forgot. */
  arrival?: number
  /**
   * When that token expires, ms. A token signed after the admission that used its place up (during a
   * store outage the edge re-signs tokens without the store), or by their last poll before a grant
   * made while away, shows they kept polling: if that admission lapsed uncollected, the place is theirs.
   */
  tokenExpires?: number
  /**
   * A scheduled room: the drawn arrival of a visitor without a queue token (core/draw.ts), the place
   * they take if they join during the pre-queue. Not evidence of an earlier life.
   */
  draw?: number
  /**
   * The arrival (µs) an access code or invite link the visitor just redeemed gives them (core/access.ts):
   * their place, if they hold none or a later one, unless an admission used their place up. Not
   * evidence of an earlier life.
   */
  lane?: number
}

/** A poll's answer: also the store port's PollResult, so both stores answer in exactly this shape. */
export type PollAnswer = (
  | {
      /**
       * recovering: the store forgot the room and waits for everybody to be back before it admits anyone;
       * prequeue: a scheduled room before its opening (nobody is admitted yet; the order is the draw's).
       */
      state: 'queued' | 'paused' | 'recovering' | 'prequeue'
      /** Arrival in µs on the store's clock; unique within a room. */
      arrival: number
      /** 1-based place in line. */
      position: number
      waiting: number
      admittedLastMinute: number
      now: number
      /** A scheduled room: the visitor's 1-based rank in the draw; 0 if they have none. */
      drawRank: number
    }
  | {
      state: 'admitted'
      arrival: number
      /** When the session ends unless renewed, ms. */
      sessionExpires: number
      admittedLastMinute: number
      now: number
      drawRank: number
    }
  /** An admin ended this visitor's session: no place in line until an admin lets them in again. */
  | { state: 'ended'; arrival: 0; admittedLastMinute: number; now: number }
) & { life: LifeMark }

/** Sessions that ran out free their slots; the rate window keeps the last minute; old marks go. */
export function expire(room: RoomState, now: number): void {
  room.active.removeUpTo(now)
  room.admissions.removeUpTo(now - MINUTE_MS)
  room.ended.removeUpTo(now - ENDED_KEEP_MS)
}

/**
 * A used-up place's mark (a token must outlast it to restore the place) is kept an abandonAfter past
 * it: a late edge reads a token that long past its expiry (core/lateness.ts), and must find the mark.
 */
export function expireUsed(room: RoomState, now: number, abandonAfterMs: number): void {
  room.used.removeUpTo(now - abandonAfterMs)
}

/**
 * The polls of some visitors of one room, at `now` (ms; `nowUs` the same instant in µs). In order:
 *   0. a room the store has no life for begins one (beginLife), recovering if it was forgotten;
 *      sessions that ran out and old admissions expire;
 *   1. each poller whose session an admin ended gets no place; the others collect an admission
 *      granted while away (which uses their place up again), pass through, or take or keep their place
 *      (a token's arrival restores a forgotten place, never later than now unless it is a drawn one,
 *      unless an admission used that place up before the token was signed; in a scheduled room's
 *      pre-queue a joiner takes their drawn place, which the draw notes; a redeemed code's lane
 *      arrival replaces a later place, or none, unless an admission used the place up);
 *   2. visitors silent for abandonAfter (and the lateness an edge reported: lateSlack) leave: at most
 *      MAX_SWEEP due seen buckets are checked, each dropping all its stale visitors (not while the
 *      line is held after an outage: holdLine);
 *   3. in fifo mode, not recovering, not held and (if scheduled) open, the head of the line is admitted, grantBudget (at most
 *      MAX_STEP) of them, less the slots reserved for sessions from before a loss, paced
 *      by dueAdmissions: a poller's session starts now; an absent visitor has until abandonAfter
 *      (and lateSlack) after their last poll to collect it, and at least collectWindowMs (the store
 *      may have missed their last polls); each admission uses up the visitor's place (expireUsed);
 *   4. each poller gets an answer.
 */
export function pollRoom(
  room: RoomState,
  polls: readonly Poll[],
  limits: AdmissionLimits,
  now: number,
  nowUs: number,
  hint: EdgeHint = { active: 0 },
): PollAnswer[] {
  beginLife(room, polls, limits, now, nowUs, hint)
  const life = room.life as Life
  const recovering = now < life.recoverUntil
  const holding = holdLine(room, limits, now, hint)
  const slack = lateSlack(room, limits, now, hint)
  const opensAt = limits.opensAtMs ?? 0
  const scheduled = opensAt > 0
  const beforeOpening = now < opensAt
  const prequeue = scheduled && beforeOpening && now >= (limits.prequeueAtMs ?? 0)
  expire(room, now)
  expireUsed(room, now, limits.abandonAfterMs)
  const arrivals: number[] = []
  const expiries: (number | undefined)[] = []
  let admittedNow = 0
  const unseen = (visitor: string) => room.seen(seenBucketOf(visitor)).delete(visitor)

  // 1. Each poller.
  const ended = new Set<number>()
  const useUp = (visitor: string) => room.used.add(visitor, now + limits.abandonAfterMs)
  for (const [i, p] of polls.entries()) {
    if (room.ended.score(p.visitor) !== undefined) {
      ended.add(i)
      arrivals[i] = 0
      continue
    }
    if (room.active.score(p.visitor) !== undefined) {
      room.line.remove(p.visitor)
      unseen(p.visitor)
      // Collected: no queue token signed before now may bring the visitor back to their place.
      useUp(p.visitor)
      arrivals[i] = p.arrival ?? nowUs
      expiries[i] = now + limits.sessionMs
      room.active.add(p.visitor, expiries[i] as number)
      continue
    }
    let arrival = room.line.score(p.visitor)
    const known = arrival !== undefined
    const usedUntil = !known || p.lane !== undefined ? room.used.score(p.visitor) : undefined
    if (!known) {
      if (p.arrival !== undefined && (usedUntil === undefined || (p.tokenExpires ?? 0) > usedUntil)) {
        // A drawn place lies before the opening by design, maybe after now: it is kept as it is.
        arrival = scheduled && isDrawnArrival(p.arrival, opensAt) ? p.arrival : Math.min(p.arrival, nowUs)
      } else if (p.draw !== undefined && prequeue) arrival = p.draw
      else if (p.lane === undefined || usedUntil !== undefined) {
        arrival = Math.max(nowUs, room.lastArrival + 1)
        room.lastArrival = arrival
      }
    }
    // A redeemed code's place (core/access.ts), when it is earlier than the one held and no admission used the place up.
    const laneTaken = p.lane !== undefined && usedUntil === undefined && (arrival === undefined || p.lane < arrival)
    if (laneTaken) arrival = p.lane as number
    arrivals[i] = arrival as number
    if (limits.mode === 'passthrough') {
      room.line.remove(p.visitor)
      unseen(p.visitor)
      room.admissions.add(`${p.visitor}:${now}`, now)
      useUp(p.visitor)
      admittedNow++
      expiries[i] = now + limits.sessionMs
      room.active.add(p.visitor, expiries[i] as number)
    } else {
      if (!known || laneTaken) {
        room.line.add(p.visitor, arrival as number)
        if (scheduled && isDrawnArrival(arrival as number, opensAt)) room.drawn.add(p.visitor, arrival as number)
      }
      const bucket = seenBucketOf(p.visitor)
      room.seen(bucket).set(p.visitor, now)
      if (room.sweep.score(String(bucket)) === undefined) room.sweep.add(String(bucket), now + limits.abandonAfterMs)
    }
  }

  // 2. The silent leave (not while held after an outage), `slack` earlier while an edge is late.
  let abandoned = 0
  const sweepAt = now - slack
  for (const b of holding ? [] : room.sweep.upTo(sweepAt, MAX_SWEEP)) {
    const seen = room.seen(Number(b))
    let oldest: number | undefined
    for (const [visitor, at] of seen) {
      if (at <= sweepAt - limits.abandonAfterMs) {
        seen.delete(visitor)
        room.line.remove(visitor)
        abandoned++
      } else if (oldest === undefined || at < oldest) oldest = at
    }
    if (oldest === undefined) room.sweep.remove(b)
    else room.sweep.add(b, oldest + limits.abandonAfterMs)
  }
  if (abandoned > 0) {
    room.abandoned += abandoned
    const bucket = Math.floor(now / TEN_SECONDS_MS)
    room.abandonedBy.set(bucket, (room.abandonedBy.get(bucket) ?? 0) + abandoned)
    for (const old of room.abandonedBy.keys()) if (old < bucket - 6) room.abandonedBy.delete(old)
  }

  // 3. Grant from the head of the line.
  const granted = new Map<string, number>()
  if (limits.mode === 'fifo' && !recovering && !beforeOpening && !holding) {
    const pace = dueAdmissions(room.lastSlotUs, nowUs, limits.newUsersPerMinute)
    const admittedLastSecond = room.admissions.countFrom(now - 1000 + 1)
    const reserved = now < life.reservedUntil ? life.reserved : 0
    const budget = Math.min(
      grantBudget({
        totalActiveUsers: limits.totalActiveUsers - reserved,
        newUsersPerMinute: limits.newUsersPerMinute,
        active: room.active.size,
        due: pace.due,
        admittedLastSecond,
      }),
      MAX_STEP,
    )
    let heads = 0
    if (budget > 0) {
      const polling = new Set(polls.map((p) => p.visitor))
      for (const v of room.line.first(budget)) {
        let expires: number
        if (polling.has(v)) {
          expires = now + limits.sessionMs
          granted.set(v, expires)
          useUp(v)
        } else {
          const seenAt = room.seen(seenBucketOf(v)).get(v) ?? now
          expires = seenAt + limits.abandonAfterMs + slack
          // Used up as of just before their last poll: its token brings them back should this lapse
          // uncollected (a poll held up at a late edge); collecting marks the place again, later.
          room.used.add(v, seenAt + limits.abandonAfterMs - 1)
        }
        unseen(v)
        room.line.remove(v)
        // At least until their next poll, though: the store may have missed their last ones (an outage).
        if (!polling.has(v)) expires = Math.max(expires, now + collectWindowMs(limits.refreshSeconds))
        room.active.add(v, expires)
        room.admissions.add(`${v}:${now}`, now)
        admittedNow++
        heads++
      }
    }
    room.lastSlotUs = paceAfter(room.lastSlotUs, pace, heads, limits.newUsersPerMinute)
  }
  room.admitted += admittedNow

  // 4. Answers.
  const admittedLastMinute = room.admissions.size
  const waiting = room.line.size
  const mark: LifeMark = { epoch: life.epoch, born: life.born, seq: life.seq }
  const waitState = limits.mode !== 'fifo' ? 'paused' : beforeOpening ? 'prequeue' : recovering ? 'recovering' : 'queued'
  return polls.map((p, i): PollAnswer => {
    if (ended.has(i)) return { state: 'ended', arrival: 0, admittedLastMinute, now, life: mark }
    const expires = expiries[i] ?? granted.get(p.visitor)
    const arrival = arrivals[i] as number
    const drawRank = scheduled ? (room.drawn.rank(p.visitor) ?? -1) + 1 : 0
    if (expires !== undefined) return { state: 'admitted', arrival, sessionExpires: expires, admittedLastMinute, now, drawRank, life: mark }
    return {
      state: waitState,
      arrival,
      position: (room.line.rank(p.visitor) as number) + 1,
      waiting,
      admittedLastMinute,
      now,
      drawRank,
      life: mark,
    }
  })
}

/**
 * Begins the room's life at its first poll, and counts the poll. With evidence that there was one
 * before (a visitor's queue token, or an edge that saw a life), the store forgot: admissions wait for
 * the recovery window, and the slots of the sessions the edge last saw active stay reserved for a
 * session length. A life with fewer polls than the edge saw in it (a failover to a replica that missed
 * the last writes) begins again the same way, reserving the sessions it lost.
 */
export function beginLife(
  room: RoomState,
  polls: readonly Poll[],
  limits: AdmissionLimits,
  now: number,
  nowUs: number,
  hint: EdgeHint,
): void {
  const recovering = (reserved: number, seq: number): Life => ({
    epoch: nowUs,
    born: now,
    recoverUntil: now + recoveryMs(limits.refreshSeconds),
    reserved,
    reservedUntil: now + limits.sessionMs,
    seq,
    outage: 0,
    holdUntil: 0,
    late: 0,
    lateUntil: 0,
  })
  if (room.life === undefined) {
    const forgotten = hint.epoch !== undefined || polls.some((p) => p.arrival !== undefined)
    room.life = forgotten
      ? recovering(hint.active, 0)
      : { epoch: nowUs, born: now, recoverUntil: 0, reserved: 0, reservedUntil: 0, seq: 0, outage: 0, holdUntil: 0, late: 0, lateUntil: 0 }
  } else if (hint.epoch === room.life.epoch && hint.seq !== undefined && hint.seq > room.life.seq) {
    room.life = recovering(Math.max(0, hint.active - room.active.size), hint.seq)
  }
  room.life.seq++
}

/** Most admissions one poll extends when it first hears of an outage (holdLine). */
export const MAX_EXTEND = 10_000

/**
 * Whether the line is held now: nobody dropped for silence, nobody admitted. An edge that could not
 * reach the store says so in its next polls (EdgeHint.outage): its visitors kept polling, answered
 * busy, and the store did not see them, so some look silent. For collectWindowMs after the store
 * first hears of that outage, every visitor who kept polling is seen again before anyone is dropped
 * (and passed by a later arrival before their token brings them back) or admitted; and admissions
 * that ran out meanwhile or are about to (granted to visitors who could not collect them) last until
 * then too, so nobody loses a turn the store gave them. Runs before the expiries (pollRoom).
 */
export function holdLine(room: RoomState, limits: AdmissionLimits, now: number, hint: EdgeHint): boolean {
  const life = room.life as Life
  if (hint.outage !== undefined && hint.outage > life.outage) {
    const until = now + collectWindowMs(limits.refreshSeconds)
    life.outage = hint.outage
    life.holdUntil = Math.max(life.holdUntil, until)
    for (const v of room.active.upTo(until, MAX_EXTEND)) room.active.add(v, until)
  }
  return now < life.holdUntil
}

/**
 * How much more silence than abandonAfter the sweep (and an absent grant) allows now, ms: the most
 * lateness an edge reported (EdgeHint.late, at most abandonAfter) in the last abandonAfter, else 0.
 */
export function lateSlack(room: RoomState, limits: AdmissionLimits, now: number, hint: EdgeHint): number {
  const life = room.life as Life
  if (now >= life.lateUntil) life.late = 0
  if (hint.late !== undefined && hint.late > 0) {
    life.late = Math.max(life.late, Math.min(hint.late, limits.abandonAfterMs))
    life.lateUntil = now + limits.abandonAfterMs
  }
  return life.late
}

/**
 * A session from before a loss came back (its renewal restored it): its reserved slot is its own
 * again, and a store that went back in time may still have the visitor in line: they leave it, so
 * nobody behind them waits for them.
 */
export function sessionReturned(room: RoomState, visitor: string, now: number): void {
  const life = room.life
  if (life !== undefined && life.reserved > 0 && now < life.reservedUntil) life.reserved--
  room.line.remove(visitor)
  room.seen(seenBucketOf(visitor)).delete(visitor)
}
