// AnalyticsStore in process memory (one edge): the minutes analytics-5.lua keeps in Redis, read from
// the memory queue and defence stores of the same process, and dropped as Redis expires its hours.
import {
  type AnalyticsInput,
  type AnalyticsRecord,
  type AnalyticsStore,
  keptUntil,
  MINUTE_MS,
  type MinuteSample,
  type MinuteState,
  minutesIn,
  type WaitCounts,
} from '../../ports/analytics-store.js'

/**
 * What a minute's state sample reads from the other stores: everything but the stock, which the edge
 * brings. Synchronous, so that a record is one step, as the script is in Redis.
 */
export type MinuteCounts = (room: string, now: number) => Omit<MinuteState, 'stock'>

interface Minute {
  state: MinuteState | null
  /** Bucket bound (s) → admissions. */
  wait: Map<number, number>
}

export class MemoryAnalyticsStore implements AnalyticsStore {
  /** Room → minute → what it holds. */
  private readonly rooms = new Map<string, Map<number, Minute>>()

  constructor(
    private readonly counts: MinuteCounts,
    private readonly clock: () => number = Date.now,
  ) {}

  async record(input: AnalyticsInput): Promise<AnalyticsRecord> {
    const now = input.now ?? this.clock()
    const minute = Math.floor(now / MINUTE_MS)
    let minutes = this.rooms.get(input.room)
    if (minutes === undefined) this.rooms.set(input.room, (minutes = new Map()))
    for (const m of minutes.keys()) if (keptUntil(m) <= now) minutes.delete(m)
    let m = minutes.get(minute)
    if (m === undefined) minutes.set(minute, (m = { state: null, wait: new Map() }))
    const sampled = m.state === null
    if (sampled) m.state = { ...this.counts(input.room, now), stock: input.stock }
    for (const [bound, n] of input.queueWait) if (n > 0) m.wait.set(bound, (m.wait.get(bound) ?? 0) + n)
    return { sampled, minute, now }
  }

  async minutes(room: string, from: number, to: number): Promise<MinuteSample[]> {
    const now = this.clock()
    const [first, last] = minutesIn(from, to)
    const out: MinuteSample[] = []
    for (const [minute, m] of this.rooms.get(room) ?? []) {
      if (minute < first || minute > last || keptUntil(minute) <= now) continue
      const queueWait: WaitCounts = [...m.wait].sort((a, b) => a[0] - b[0])
      out.push({ minute, state: m.state && { ...m.state, refused: { ...m.state.refused } }, queueWait })
    }
    return out.sort((a, b) => a.minute - b.minute)
  }
}
