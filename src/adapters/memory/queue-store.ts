// QueueStore in process memory: the same rules as ../redis/lua/poll-5.lua, for a single instance
// with no Redis. Kept step for step in line with the Lua so that one contract suite passes both.
import {
  HISTORY_MS,
  type PollInput,
  type PollResult,
  type QueueStore,
  type RenewInput,
  type RenewResult,
  type RoomSample,
  type RoomStats,
} from '../../ports/queue-store.js'
import { OrderedSet } from './ordered-set.js'

const MAX_STEP = 500

interface Room {
  line: OrderedSet
  seen: OrderedSet
  active: OrderedSet
  ended: OrderedSet
  admissions: OrderedSet
  abandoned: number
  /** Abandoned visitors per 10-s bucket. */
  abandonedBy: Map<number, number>
  admitted: number
  lastArrival: number
  history: Map<number, RoomSample>
}

export class MemoryQueueStore implements QueueStore {
  private readonly rooms = new Map<string, Room>()

  constructor(private readonly clock: () => number = Date.now) {}

  private room(id: string): Room {
    let room = this.rooms.get(id)
    if (room === undefined) {
      room = {
        line: new OrderedSet(),
        seen: new OrderedSet(),
        active: new OrderedSet(),
        ended: new OrderedSet(),
        admissions: new OrderedSet(),
        abandoned: 0,
        abandonedBy: new Map(),
        admitted: 0,
        lastArrival: 0,
        history: new Map(),
      }
      this.rooms.set(id, room)
    }
    return room
  }

  private expire(r: Room, now: number): void {
    r.active.removeUpTo(now)
    r.admissions.removeUpTo(now - 60000)
  }

  async poll(input: PollInput): Promise<PollResult> {
    const now = input.now ?? this.clock()
    // Arrivals are in µs and unique per room, so two visitors never tie.
    const nowUs = now * 1000
    const { visitor, limits } = input
    const r = this.room(input.room)
    this.expire(r, now)

    const admitted = (arrival: number): PollResult => {
      const sessionExpires = now + limits.sessionMs
      r.active.add(visitor, sessionExpires)
      return { state: 'admitted', arrival, sessionExpires, admittedLastMinute: r.admissions.size, now }
    }

    if (r.active.score(visitor) !== undefined) {
      r.line.remove(visitor)
      r.seen.remove(visitor)
      return admitted(input.arrival ?? nowUs)
    }

    let arrival = r.line.score(visitor)
    if (arrival === undefined) {
      if (input.arrival !== undefined) arrival = Math.min(input.arrival, nowUs)
      else {
        arrival = Math.max(nowUs, r.lastArrival + 1)
        r.lastArrival = arrival
      }
    }

    if (limits.mode === 'passthrough') {
      r.line.remove(visitor)
      r.seen.remove(visitor)
      r.admissions.add(`${visitor}:${now}`, now)
      r.admitted++
      return admitted(arrival)
    }

    r.line.add(visitor, arrival)
    r.seen.add(visitor, now)

    const stale = r.seen.removeUpTo(now - limits.abandonAfterMs, MAX_STEP)
    for (const v of stale) r.line.remove(v)
    r.abandoned += stale.length
    if (stale.length > 0) {
      const bucket = Math.floor(now / 10000)
      r.abandonedBy.set(bucket, (r.abandonedBy.get(bucket) ?? 0) + stale.length)
      for (const b of r.abandonedBy.keys()) if (b < bucket - 6) r.abandonedBy.delete(b)
    }

    let mine: number | undefined
    if (limits.mode === 'fifo') {
      const free = limits.totalActiveUsers - r.active.size
      const perTen = Math.ceil(limits.newUsersPerMinute / 6)
      const budget = Math.min(
        free,
        limits.newUsersPerMinute - r.admissions.size,
        perTen - r.admissions.countFrom(now - 10000 + 1),
        MAX_STEP,
      )
      if (budget > 0) {
        for (const v of r.line.first(budget)) {
          let expires: number
          if (v === visitor) {
            expires = now + limits.sessionMs
            mine = expires
          } else {
            expires = (r.seen.score(v) ?? now) + limits.abandonAfterMs
          }
          r.line.remove(v)
          r.seen.remove(v)
          r.active.add(v, expires)
          r.admissions.add(`${v}:${now}`, now)
          r.admitted++
        }
      }
    }

    if (mine !== undefined) {
      return { state: 'admitted', arrival, sessionExpires: mine, admittedLastMinute: r.admissions.size, now }
    }
    return {
      state: limits.mode === 'fifo' ? 'queued' : 'paused',
      arrival,
      position: (r.line.rank(visitor) as number) + 1,
      waiting: r.line.size,
      admittedLastMinute: r.admissions.size,
      now,
    }
  }

  async renew(input: RenewInput): Promise<RenewResult> {
    const now = input.now ?? this.clock()
    const r = this.room(input.room)
    r.ended.removeUpTo(now - input.sessionMs)
    if (r.ended.score(input.visitor) !== undefined) {
      r.active.remove(input.visitor)
      return undefined
    }
    const sessionExpires = now + input.sessionMs
    r.active.add(input.visitor, sessionExpires)
    return { sessionExpires, now }
  }

  async endSession(room: string, visitor: string, at?: number): Promise<boolean> {
    const r = this.room(room)
    r.ended.add(visitor, at ?? this.clock())
    return r.active.remove(visitor)
  }

  async endAllSessions(room: string, at?: number): Promise<number> {
    const now = at ?? this.clock()
    const r = this.room(room)
    const members = r.active.first(r.active.size)
    for (const v of members) {
      r.ended.add(v, now)
      r.active.remove(v)
    }
    return members.length
  }

  async stats(room: string, at?: number): Promise<RoomStats> {
    const now = at ?? this.clock()
    const r = this.room(room)
    this.expire(r, now)
    const bucket = Math.floor(now / 10000)
    let abandonedLastMinute = 0
    for (let b = bucket - 5; b <= bucket; b++) abandonedLastMinute += r.abandonedBy.get(b) ?? 0
    return {
      waiting: r.line.size,
      active: r.active.size,
      admittedLastMinute: r.admissions.size,
      abandoned: r.abandoned,
      abandonedLastMinute,
      now,
    }
  }

  async recordSample(room: string, at?: number): Promise<void> {
    const now = at ?? this.clock()
    const r = this.room(room)
    const bucket = Math.floor(now / 10000)
    if (r.history.has(bucket)) return
    const s = await this.stats(room, now)
    r.history.set(bucket, {
      t: now,
      waiting: s.waiting,
      active: s.active,
      admittedLastMinute: s.admittedLastMinute,
      abandonedLastMinute: s.abandonedLastMinute,
    })
    const oldest = Math.floor((now - HISTORY_MS) / 10000)
    for (const b of r.history.keys()) if (b < oldest) r.history.delete(b)
  }

  async history(room: string): Promise<RoomSample[]> {
    return [...this.room(room).history.values()].sort((a, b) => a.t - b.t)
  }

  async ping(): Promise<boolean> {
    return true
  }

  async close(): Promise<void> {}
}
