// The admission rule, once: what one poll of a room does, step by step, and how many the room may
// admit. The embedded store (adapters/memory) runs pollRoom on its own sets; the test model and the
// simulator's prediction use grantBudget. adapters/redis/lua/poll-7.lua is the same rule in Lua, for
// Redis, and keeps these steps in this order; test/differential.test.ts drives both with the same
// random operations and compares every answer.
import type { AdmissionLimits } from './settings.js'

/** Most visitors one poll admits or drops; the rest wait for the next poll. */
export const MAX_STEP = 500
/** Waiting visitors are spread over this many "seen" buckets by seenBucketOf. */
export const SEEN_BUCKETS = 16384
/** Most seen buckets one poll checks for visitors who stopped polling. */
export const MAX_SWEEP = 16
/** The rate has two windows: the last minute, and a sixth of it in the last ten seconds. */
export const MINUTE_MS = 60_000
export const TEN_SECONDS_MS = 10_000

/** The seen bucket of a visitor (bucketOf in poll-7.lua). */
export function seenBucketOf(visitor: string): number {
  let h = 0
  for (let i = 0; i < visitor.length; i++) h = (h * 31 + visitor.charCodeAt(i)) % SEEN_BUCKETS
  return h
}

export interface BudgetInput {
  totalActiveUsers: number
  newUsersPerMinute: number
  active: number
  /** Admitted in (now − 60 s, now]. */
  admittedLastMinute: number
  /** Admitted in (now − 10 s, now]. */
  admittedLastTenSeconds: number
}

/**
 * How many the room may admit now: free slots, the minute's rate, and at most a sixth of it in ten
 * seconds. Not capped by MAX_STEP or by who is waiting; may be negative or fractional (the simulator
 * works with fluid visitors).
 */
export function grantBudget(b: BudgetInput): number {
  return Math.min(
    b.totalActiveUsers - b.active,
    b.newUsersPerMinute - b.admittedLastMinute,
    Math.ceil(b.newUsersPerMinute / 6) - b.admittedLastTenSeconds,
  )
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
  /** The seen buckets: visitor → last poll ms, waiting visitors only. */
  seen(bucket: number): Map<string, number>
  /** The last arrival handed out, µs. */
  lastArrival: number
  admitted: number
  abandoned: number
  /** Visitors dropped per 10-s bucket. */
  abandonedBy: Map<number, number>
}

export interface Poll {
  visitor: string
  /** Arrival µs from a verified queue token: restores a place the store forgot. */
  arrival?: number
}

export type PollAnswer =
  | { state: 'queued' | 'paused'; arrival: number; position: number; waiting: number; admittedLastMinute: number; now: number }
  | { state: 'admitted'; arrival: number; sessionExpires: number; admittedLastMinute: number; now: number }

/** Sessions that ran out free their slots; the rate window keeps only the last minute. */
export function expire(room: RoomState, now: number): void {
  room.active.removeUpTo(now)
  room.admissions.removeUpTo(now - MINUTE_MS)
}

/**
 * The polls of some visitors of one room, at `now` (ms; `nowUs` the same instant in µs). In order:
 *   0. sessions that ran out and old admissions expire;
 *   1. each poller collects an admission granted while away, passes through, or takes or keeps
 *      their place (a token's arrival restores a forgotten place, never later than now);
 *   2. visitors silent for abandonAfter leave: at most MAX_SWEEP due seen buckets are checked, each
 *      dropping all its stale visitors;
 *   3. in fifo mode, the head of the line is admitted, grantBudget (at most MAX_STEP) of them: a
 *      poller's session starts now; an absent visitor has until abandonAfter after their last poll
 *      to collect it;
 *   4. each poller gets an answer.
 */
export function pollRoom(room: RoomState, polls: readonly Poll[], limits: AdmissionLimits, now: number, nowUs: number): PollAnswer[] {
  expire(room, now)
  const arrivals: number[] = []
  const expiries: (number | undefined)[] = []
  let admittedNow = 0
  const unseen = (visitor: string) => room.seen(seenBucketOf(visitor)).delete(visitor)

  // 1. Each poller.
  for (const [i, p] of polls.entries()) {
    if (room.active.score(p.visitor) !== undefined) {
      room.line.remove(p.visitor)
      unseen(p.visitor)
      arrivals[i] = p.arrival ?? nowUs
      expiries[i] = now + limits.sessionMs
      room.active.add(p.visitor, expiries[i] as number)
      continue
    }
    let arrival = room.line.score(p.visitor)
    const known = arrival !== undefined
    if (arrival === undefined) {
      if (p.arrival !== undefined) arrival = Math.min(p.arrival, nowUs)
      else {
        arrival = Math.max(nowUs, room.lastArrival + 1)
        room.lastArrival = arrival
      }
    }
    arrivals[i] = arrival
    if (limits.mode === 'passthrough') {
      room.line.remove(p.visitor)
      unseen(p.visitor)
      room.admissions.add(`${p.visitor}:${now}`, now)
      admittedNow++
      expiries[i] = now + limits.sessionMs
      room.active.add(p.visitor, expiries[i] as number)
    } else {
      if (!known) room.line.add(p.visitor, arrival)
      const bucket = seenBucketOf(p.visitor)
      room.seen(bucket).set(p.visitor, now)
      if (room.sweep.score(String(bucket)) === undefined) room.sweep.add(String(bucket), now + limits.abandonAfterMs)
    }
  }

  // 2. The silent leave.
  let abandoned = 0
  for (const b of room.sweep.upTo(now, MAX_SWEEP)) {
    const seen = room.seen(Number(b))
    let oldest: number | undefined
    for (const [visitor, at] of seen) {
      if (at <= now - limits.abandonAfterMs) {
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
  if (limits.mode === 'fifo') {
    const budget = Math.min(
      grantBudget({
        totalActiveUsers: limits.totalActiveUsers,
        newUsersPerMinute: limits.newUsersPerMinute,
        active: room.active.size,
        admittedLastMinute: room.admissions.size,
        admittedLastTenSeconds: room.admissions.countFrom(now - TEN_SECONDS_MS + 1),
      }),
      MAX_STEP,
    )
    if (budget > 0) {
      const polling = new Set(polls.map((p) => p.visitor))
      for (const v of room.line.first(budget)) {
        let expires: number
        if (polling.has(v)) {
          expires = now + limits.sessionMs
          granted.set(v, expires)
        } else {
          expires = (room.seen(seenBucketOf(v)).get(v) ?? now) + limits.abandonAfterMs
        }
        unseen(v)
        room.line.remove(v)
        room.active.add(v, expires)
        room.admissions.add(`${v}:${now}`, now)
        admittedNow++
      }
    }
  }
  room.admitted += admittedNow

  // 4. Answers.
  const admittedLastMinute = room.admissions.size
  const waiting = room.line.size
  return polls.map((p, i) => {
    const expires = expiries[i] ?? granted.get(p.visitor)
    const arrival = arrivals[i] as number
    if (expires !== undefined) return { state: 'admitted', arrival, sessionExpires: expires, admittedLastMinute, now }
    return {
      state: limits.mode === 'fifo' ? 'queued' : 'paused',
      arrival,
      position: (room.line.rank(p.visitor) as number) + 1,
      waiting,
      admittedLastMinute,
      now,
    }
  })
}
