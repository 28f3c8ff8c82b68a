// The stock of the events the rooms sell (a room's `event` setting), read with each reload: one
// ClaimGate counts call per event, however many rooms sell it. stock() answers each visit from it, so
// that a sold-out room stops admissions (core/stock.ts) without a store call per poll. Counts the gate
// does not have, or a call that fails, leave the room as if it were not linked.
import type { RoomSettings } from '../core/settings.js'
import type { StockView } from '../core/stock.js'
import type { ClaimGate } from '../ports/claim-gate.js'
import type { StoreCallHook } from './directory.js'

export class RoomStocks {
  /** Per linked room: its event's stock at the last look (counts undefined: unknown). */
  private stocks = new Map<string, StockView>()
  /** Events whose last counts call failed (logged once). */
  private readonly failing = new Set<string>()

  constructor(
    private readonly gate: Pick<ClaimGate, 'counts'> | undefined,
    private readonly now: () => number,
    /** The time handed to the gate: the test's clock, or undefined so that the gate uses its own (Redis TIME). */
    private readonly storeNow: () => number | undefined,
    private readonly log: (event: string, fields: Record<string, unknown>) => void,
    private readonly onStoreCall: StoreCallHook,
  ) {}

  /** A linked room's event stock, as the last reload saw it; undefined for a room that is not linked. */
  get(room: string): StockView | undefined {
    return this.stocks.get(room)
  }

  /** Reads the stock of every event a room is linked to; kept only if `current()` still holds when it is read. */
  async reload(rooms: readonly RoomSettings[], current: () => boolean): Promise<void> {
    const gate = this.gate
    const events = [...new Set(rooms.flatMap((r) => (r.event === null ? [] : [r.event])))]
    const at = this.now()
    const counts = new Map(
      await Promise.all(
        events.map(async (event) => {
          if (gate === undefined) return [event, undefined] as const
          const started = performance.now()
          try {
            const counts = await gate.counts(event, this.storeNow())
            this.onStoreCall('gate_counts', (performance.now() - started) / 1000, true)
            this.failing.delete(event)
            return [event, counts] as const
          } catch (err) {
            this.onStoreCall('gate_counts', (performance.now() - started) / 1000, false)
            // Never stop a sale on a missing count: unknown, as if the room were not linked.
            if (!this.failing.has(event)) this.log('stock_unavailable', { event, message: err instanceof Error ? err.message : 'error' })
            this.failing.add(event)
            return [event, undefined] as const
          }
        }),
      ),
    )
    if (!current()) return
    const stocks = new Map<string, StockView>()
    for (const r of rooms) if (r.event !== null) stocks.set(r.id, { event: r.event, counts: counts.get(r.event), at })
    this.stocks = stocks
  }
}
