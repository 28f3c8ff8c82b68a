// DefenceStore in process memory (one edge): the same windows and buckets as join-1.lua and
// refusals-1.lua keep in Redis.
import {
  type DefenceStore,
  JOIN_WINDOW_MS,
  type JoinInput,
  type JoinResult,
  noRefusals,
  REFUSAL_BUCKET_MS,
  REFUSAL_BUCKETS,
  REFUSAL_REASONS,
  type RefusalCounts,
  type RefusalReason,
} from '../../ports/defence-store.js'
import { RoomMap } from './room-map.js'

interface Room {
  /** The current minute's new places by network; older minutes are dropped. */
  minute: number
  joins: Map<string, number>
  total: Record<RefusalReason, number>
  /** 10-s bucket → refusals by reason. */
  buckets: Map<number, Record<RefusalReason, number>>
}

function newRoom(): Room {
  return { minute: Number.NEGATIVE_INFINITY, joins: new Map(), total: noRefusals(), buckets: new Map() }
}

export class MemoryDefenceStore implements DefenceStore {
  private readonly rooms = new RoomMap(newRoom)

  constructor(private readonly clock: () => number = Date.now) {}

  async countJoin(input: JoinInput): Promise<JoinResult> {
    const now = input.now ?? this.clock()
    const r = this.rooms.of(input.room)
    const minute = Math.floor(now / JOIN_WINDOW_MS)
    if (minute !== r.minute) {
      r.minute = minute
      r.joins.clear()
    }
    const count = r.joins.get(input.network) ?? 0
    if (count >= input.limit) return { allowed: false, count, retryAfterMs: (minute + 1) * JOIN_WINDOW_MS - now, now }
    r.joins.set(input.network, count + 1)
    return { allowed: true, count: count + 1, now }
  }

  /** The room's refused joins in all, by reason (what the analytics' minute sample reads). */
  refusedTotals(room: string): Record<RefusalReason, number> {
    return { ...this.rooms.of(room).total }
  }

  async addRefusals(room: string, counts: Partial<Record<RefusalReason, number>>, at?: number): Promise<RefusalCounts> {
    const now = at ?? this.clock()
    const r = this.rooms.of(room)
    const bucket = Math.floor(now / REFUSAL_BUCKET_MS)
    for (const reason of REFUSAL_REASONS) {
      const n = counts[reason] ?? 0
      if (n <= 0) continue
      r.total[reason] += n
      const b = r.buckets.get(bucket) ?? noRefusals()
      b[reason] += n
      r.buckets.set(bucket, b)
    }
    for (const b of r.buckets.keys()) if (b <= bucket - REFUSAL_BUCKETS) r.buckets.delete(b)
    const lastMinute = noRefusals()
    for (let b = bucket - REFUSAL_BUCKETS + 1; b <= bucket; b++) {
      for (const reason of REFUSAL_REASONS) lastMinute[reason] += r.buckets.get(b)?.[reason] ?? 0
    }
    return { total: { ...r.total }, lastMinute, now }
  }
}
