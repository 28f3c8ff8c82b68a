// QueueStore in process memory, for a single instance with no Redis: the admission rule of
// core/admission.ts (pollRoom) on in-process sorted sets laid out as the Lua lays out Redis, so that
// the contract suite and the differential test (test/differential.test.ts) hold it to poll-12.lua.

import { ENDED_KEEP_MS, expire, pollRoom, type RoomState, type ScoredSet, sessionReturned } from '../../core/admission.js'
import {
  byEndTime,
  type DrawPage,
  type FinishInput,
  type FinishResult,
  HISTORY_MS,
  type PollInput,
  type PollResult,
  type QueueStore,
  type RenewInput,
  type RenewResult,
  type RoomSample,
  type RoomStats,
  type RoomWatch,
  type WatchLook,
} from '../../ports/queue-store.js'
import { OrderedSet } from './ordered-set.js'
import { RoomMap } from './room-map.js'

/** A room as the Lua keeps it in Redis, plus what only the other scripts read. */
interface Room extends RoomState {
  /** visitor → when the origin ended their session, ms (finish-2.lua): not kept out of the line. */
  finished: OrderedSet
  seenBuckets: Map<number, Map<string, number>>
  history: Map<number, RoomSample>
}

/** What the edge estimates waits from (watch), as the Redis store reads it: the line, the pace, sampled expiries, the totals. */
function look(r: Room, asked: WatchLook) {
  const size = r.active.size
  const at = [...new Set(asked.ranks.map((k) => (k < 0 ? size + k : k)).filter((k) => k >= 0 && k < size))].sort((a, b) => a - b)
  const members = r.active.first((at[at.length - 1] ?? -1) + 1)
  return {
    waiting: r.line.size,
    lastSlotUs: r.lastSlotUs ?? null,
    reserved: r.life?.reserved ?? 0,
    reservedUntil: r.life?.reservedUntil ?? 0,
    expiries: at.map((k): [number, number, string] => [k, r.active.score(members[k] as string) as number, members[k] as string]),
    tracked: asked.visitors.map((v) => r.active.score(v) ?? null),
    admitted: r.admitted,
    abandoned: r.abandoned,
  }
}

function newRoom(): Room {
  const seenBuckets = new Map<number, Map<string, number>>()
  return {
    line: new OrderedSet(),
    sweep: new OrderedSet(),
    active: new OrderedSet(),
    admissions: new OrderedSet(),
    used: new OrderedSet(),
    ended: new OrderedSet(),
    drawn: new OrderedSet(),
    finished: new OrderedSet(),
    lastSlotUs: undefined,
    life: undefined,
    seenBuckets,
    seen(bucket) {
      let seen = seenBuckets.get(bucket)
      if (seen === undefined) {
        seen = new Map()
        seenBuckets.set(bucket, seen)
      }
      return seen
    },
    lastArrival: 0,
    admitted: 0,
    abandoned: 0,
    abandonedBy: new Map(),
    history: new Map(),
  }
}

export class MemoryQueueStore implements QueueStore {
  private readonly rooms = new RoomMap(newRoom)

  constructor(private readonly clock: () => number = Date.now) {}

  async poll(input: PollInput): Promise<PollResult> {
    const now = input.now ?? this.clock()
    // Arrivals are in µs and unique per room, so two visitors never tie.
    const [answer] = pollRoom(
      this.rooms.of(input.room),
      [{ visitor: input.visitor, arrival: input.arrival, tokenExpires: input.tokenExpires, draw: input.draw, lane: input.lane }],
      input.limits,
      now,
      now * 1000,
      input.hint,
    )
    return answer as PollResult
  }

  async renew(input: RenewInput): Promise<RenewResult> {
    const now = input.now ?? this.clock()
    const r = this.rooms.of(input.room)
    r.ended.removeUpTo(now - ENDED_KEEP_MS)
    if (r.ended.score(input.visitor) !== undefined) {
      r.active.remove(input.visitor)
      return undefined
    }
    if (r.active.score(input.visitor) === undefined) {
      // The origin ended it: a token from before is refused (the visitor may join the line again).
      if (r.finished.score(input.visitor) !== undefined) return undefined
      // A session the store does not know came from before a loss: restored, it takes back its reserved slot.
      sessionReturned(r, input.visitor, now)
    }
    const sessionExpires = now + input.sessionMs
    r.active.add(input.visitor, sessionExpires)
    return { sessionExpires, now }
  }

  async endSession(room: string, visitor: string, at?: number): Promise<boolean> {
    const r = this.rooms.of(room)
    r.ended.add(visitor, at ?? this.clock())
    return r.active.remove(visitor)
  }

  async finishSession(input: FinishInput): Promise<FinishResult> {
    const at = input.now ?? this.clock()
    const r = this.rooms.of(input.room)
    r.finished.removeUpTo(at - input.keepMs)
    r.finished.add(input.visitor, at)
    return { active: r.active.remove(input.visitor), at }
  }

  async watch(room: string, endedSince: number, limit = 10_000, asked: WatchLook = { ranks: [], visitors: [] }): Promise<RoomWatch> {
    const r = this.rooms.of(room)
    const since = (set: ScoredSet) =>
      set
        .first(set.size)
        .map((visitor) => ({ visitor, at: set.score(visitor) as number }))
        .filter((e) => e.at >= endedSince)
        .slice(0, limit)
    const ended = [...since(r.ended), ...since(r.finished)].sort(byEndTime).slice(0, limit)
    return {
      ended,
      life: r.life ? { epoch: r.life.epoch, born: r.life.born, seq: r.life.seq } : null,
      active: r.active.size,
      ...look(r, asked),
    }
  }

  async draw(room: string, offset: number, limit: number): Promise<DrawPage> {
    const drawn = this.rooms.of(room).drawn
    const entries = drawn
      .first(offset + limit)
      .slice(offset)
      .map((v): [string, number] => [v, drawn.score(v) as number])
    return { total: drawn.size, entries }
  }

  async allowAgain(room: string, visitor: string): Promise<boolean> {
    return this.rooms.of(room).ended.remove(visitor)
  }

  async endAllSessions(room: string, at?: number): Promise<number> {
    const now = at ?? this.clock()
    const r = this.rooms.of(room)
    const members = r.active.first(r.active.size)
    for (const v of members) {
      r.ended.add(v, now)
      r.active.remove(v)
    }
    return members.length
  }

  async stats(room: string, at?: number): Promise<RoomStats> {
    const now = at ?? this.clock()
    const r = this.rooms.of(room)
    expire(r, now)
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

  /** A minute's numbers for the analytics (analytics-store.ts): the line and sessions as stats() counts them, and the running totals. */
  minuteCounts(room: string, now: number): { waiting: number; active: number; admitted: number; abandoned: number } {
    const r = this.rooms.of(room)
    expire(r, now)
    return { waiting: r.line.size, active: r.active.size, admitted: r.admitted, abandoned: r.abandoned }
  }

  async recordSample(room: string, at?: number): Promise<void> {
    const now = at ?? this.clock()
    const r = this.rooms.of(room)
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
    return [...this.rooms.of(room).history.values()].sort((a, b) => a.t - b.t)
  }

  async ping(): Promise<boolean> {
    return true
  }

  async close(): Promise<void> {}
}
