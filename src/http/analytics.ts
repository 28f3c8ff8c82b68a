// The analytics sampler: at the start of every minute of the store's clock, each edge records each
// room's minute (AnalyticsStore.record, one store call a room): the first edge in the minute takes the
// minute's state sample, with the event's stock as this edge sees it, and every edge sends the
// admissions it made since its last record, by time in queue: the change of its metrics' histogram
// cell (src/http/metrics.ts), so nothing is counted twice. A failed record keeps its counts for the
// next. Node calls sample() with the rooms' reload and from a timer; the Worker with the reload (after
// its requests) and its cron. Either way sample() is cheap until the next minute is due.

import type { RoomSettings } from '../core/settings.js'
import { type StockView, stockState } from '../core/stock.js'
import type { AnalyticsRecord, AnalyticsStore, SampledStock, WaitCounts } from '../ports/analytics-store.js'

/** A room's time-in-queue histogram as the edge counts it: per bucket, not cumulative, the last +Inf; only ever growing. */
export interface QueueWaitCounts {
  readonly counts: ArrayLike<number>
}

export interface AnalyticsSamplerOptions {
  store: Pick<AnalyticsStore, 'record'>
  rooms: { rooms(): readonly RoomSettings[]; stock(room: string): StockView | undefined }
  /** The histogram's upper bounds, seconds (core/metrics.ts QUEUE_WAIT_BUCKETS); +Inf follows the last. */
  bounds: readonly number[]
  /** The room's time-in-queue counts; undefined while metrics are off (then no admissions are sent). */
  queueWait: (room: string) => QueueWaitCounts | undefined
  /** The edge's clock, ms. */
  now: () => number
  /** The time handed to the store: the test's clock, or undefined for the store's own (Redis TIME). */
  storeNow: () => number | undefined
  /** How often to record, ms: a whole number of minutes; 0 turns the sampler off. */
  everyMs: number
}

/** After a record that failed, the next try comes this much later (if the minute has not ended first). */
const RETRY_MS = 10_000

/** What a sample says of a room's stock: its event's state as this edge last saw it, or none. */
export function sampledStock(room: RoomSettings, view: StockView | undefined): SampledStock {
  if (room.event === null) return 'none'
  return stockState(view?.event === room.event ? view.counts : undefined)
}

export class AnalyticsSampler {
  /** When the next record is due, on this edge's clock. */
  private dueAt = Number.NEGATIVE_INFINITY
  private running: Promise<void> | undefined
  /** Per room: the histogram counts already recorded, per bucket. */
  private readonly sent = new Map<string, number[]>()

  constructor(private readonly o: AnalyticsSamplerOptions) {}

  /** Records every room's minute if it is due (once a period, at its start), unless a record is under way. */
  sample(): Promise<void> {
    if (this.o.everyMs <= 0) return Promise.resolve()
    if (this.running !== undefined) return this.running
    if (this.o.now() < this.dueAt) return Promise.resolve()
    const running = this.recordAll().finally(() => {
      this.running = undefined
    })
    this.running = running
    return running
  }

  private async recordAll(): Promise<void> {
    const startedAt = this.o.now()
    const records = await Promise.all(this.o.rooms.rooms().map((room) => this.recordRoom(room)))
    const done = records.find((r) => r !== undefined)
    // The next period starts on the store's clock: its offset from this edge's, as the record showed it.
    const period = this.o.everyMs
    const next =
      done === undefined
        ? (Math.floor(startedAt / period) + 1) * period
        : (Math.floor(done.now / period) + 1) * period - (done.now - startedAt)
    this.dueAt = records.includes(undefined) ? Math.min(next, this.o.now() + RETRY_MS) : next
  }

  /** One room's record; undefined if the store did not take it (its counts wait for the next). */
  private async recordRoom(room: RoomSettings): Promise<AnalyticsRecord | undefined> {
    const counts = this.o.queueWait(room.id)?.counts
    const sent = this.sent.get(room.id) ?? []
    const added: number[] = []
    const queueWait: WaitCounts = []
    for (let i = 0; i < (counts?.length ?? 0); i++) {
      const n = ((counts as ArrayLike<number>)[i] ?? 0) - (sent[i] ?? 0)
      added[i] = n
      if (n > 0) queueWait.push([this.o.bounds[i] ?? Number.POSITIVE_INFINITY, n])
    }
    try {
      const record = await this.o.store.record({
        room: room.id,
        stock: sampledStock(room, this.o.rooms.stock(room.id)),
        queueWait,
        now: this.o.storeNow(),
      })
      this.sent.set(
        room.id,
        added.map((n, i) => (sent[i] ?? 0) + n),
      )
      return record
    } catch {
      // The store is away: these admissions go with the next record.
      return undefined
    }
  }
}
