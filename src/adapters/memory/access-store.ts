// AccessStore in process memory (one edge): redeem of core/access.ts on maps laid out as
// access-redeem-7.lua keeps them in Redis.
import { type AccessGrant, type AccessRoomState, type GrantTerms, type RedeemInput, type Redemption, redeem } from '../../core/access.js'
import type { AccessStore, GrantPage, NewGrant } from '../../ports/access-store.js'
import { RoomMap } from './room-map.js'

interface Room extends AccessRoomState {
  /** Grant ids, oldest first: the list's order (as the Redis store's creation order). */
  order: string[]
  failureMinute: number
  failureCounts: Map<string, number>
}

function newRoom(): Room {
  const room: Room = {
    grants: new Map(),
    used: new Map(),
    revoked: new Map(),
    codes: new Map(),
    redeemed: new Map(),
    last: new Map(),
    order: [],
    failureMinute: Number.NEGATIVE_INFINITY,
    failureCounts: new Map(),
    // One minute's counts are kept; a new minute starts afresh (Redis lets the old hash expire).
    failures(minute) {
      if (minute !== room.failureMinute) {
        room.failureMinute = minute
        room.failureCounts = new Map()
      }
      return room.failureCounts
    },
  }
  return room
}

export class MemoryAccessStore implements AccessStore {
  private readonly rooms = new RoomMap(newRoom)

  constructor(private readonly clock: () => number = Date.now) {}

  private grant(r: Room, terms: GrantTerms): AccessGrant {
    return { ...terms, used: r.used.get(terms.id) ?? 0, revokedAt: r.revoked.get(terms.id) ?? null }
  }

  async create(room: string, grants: readonly NewGrant[]): Promise<void> {
    const r = this.rooms.of(room)
    for (const g of grants) {
      if (!r.grants.has(g.terms.id)) r.order.push(g.terms.id)
      r.grants.set(g.terms.id, { ...g.terms })
      if (g.digest !== undefined) r.codes.set(g.digest, g.terms.id)
    }
  }

  async list(room: string, offset: number, limit: number): Promise<GrantPage> {
    const r = this.rooms.of(room)
    const ids = [...r.order].reverse().slice(offset, offset + limit)
    return { total: r.order.length, grants: ids.map((id) => this.grant(r, r.grants.get(id) as GrantTerms)) }
  }

  async get(room: string, id: string): Promise<AccessGrant | undefined> {
    const r = this.rooms.of(room)
    const terms = r.grants.get(id)
    return terms === undefined ? undefined : this.grant(r, terms)
  }

  async revoke(room: string, id: string, at: number): Promise<AccessGrant | undefined> {
    const r = this.rooms.of(room)
    if (!r.grants.has(id)) return undefined
    if (!r.revoked.has(id)) r.revoked.set(id, at)
    return this.get(room, id)
  }

  async redeem(input: RedeemInput): Promise<Redemption> {
    const now = input.now ?? this.clock()
    return redeem(this.rooms.of(input.room), input, now, now * 1000)
  }
}
