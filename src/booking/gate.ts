// The booking origin's side of the claim gate (src/ports/claim-gate.ts): the units a hold asks for,
// the seats to offer instead, and the gate calls of a claim's life, each of which may fail without
// harm. A gate that is down or wrong costs the database work, never a wrong sale: PostgreSQL decides
// every claim the gate lets through, and the reconciler (./reconciler.ts) repairs the gate.

import { BoundedMap } from '../core/bounded-map.js'
import type { ClaimGate, GateClaim, GateUnit } from '../ports/claim-gate.js'
import type { Hold, ItemClaim, SeatStore } from '../ports/seat-store.js'

export const SEAT_UNIT = 'seat:'
export const ITEM_UNIT = 'item:'
export const seatUnit = (seat: string) => `${SEAT_UNIT}${seat}`
export const itemUnit = (item: string) => `${ITEM_UNIT}${item}`

/** The gate's units of a claim: each seat once, each item with its quantity. */
export function claimUnits(seats: string[], items: ItemClaim[] = []): GateUnit[] {
  return [
    ...seats.map((s) => ({ unit: seatUnit(s), quantity: 1 })),
    ...items.map((i) => ({ unit: itemUnit(i.item), quantity: i.quantity })),
  ]
}

export const holdUnits = (hold: Hold): GateUnit[] => claimUnits(hold.seats, hold.items)

/** Seats the gate offers in place of taken ones: the nearest CANDIDATES to the ones asked for. */
const CANDIDATES = 32

interface SeatPlace {
  seat: string
  row: string
  number: number
}

/**
 * The seats nearest to `wanted` (not counting them), best first, as anteroom_hold orders them
 * (migrations/002): rows apart × 1000 + numbers apart to the closest seat asked for, then the name.
 * One pass over the event's seats, keeping the best CANDIDATES.
 */
export function nearestSeats(layout: readonly SeatPlace[], wanted: readonly string[], count = CANDIDATES): string[] {
  const asked = new Set(wanted)
  const anchors = layout.filter((s) => asked.has(s.seat))
  if (anchors.length === 0) return []
  const best: { seat: string; d: number }[] = []
  for (const s of layout) {
    if (asked.has(s.seat)) continue
    let d = Number.POSITIVE_INFINITY
    for (const a of anchors) d = Math.min(d, Math.abs(s.row.charCodeAt(0) - a.row.charCodeAt(0)) * 1000 + Math.abs(s.number - a.number))
    if (best.length === count && !before(d, s.seat, best[count - 1] as { seat: string; d: number })) continue
    let i = best.length
    while (i > 0 && before(d, s.seat, best[i - 1] as { seat: string; d: number })) i--
    best.splice(i, 0, { seat: s.seat, d })
    if (best.length > count) best.pop()
  }
  return best.map((b) => b.seat)
}

const before = (d: number, seat: string, other: { seat: string; d: number }) => d < other.d || (d === other.d && seat < other.seat)

export interface GateStats {
  /** Gate calls that failed (Redis away): the database decided alone. */
  failures: number
  /** Claims the gate refused without the database. */
  refused: number
  /** Claims the gate let through to the database. */
  passed: number
  /** Claims the gate knew nothing about (not loaded yet): the database decided alone. */
  unknown: number
}

/**
 * The gate calls of a claim's life. Every call is best-effort: a failure is counted and the claim
 * goes on as if there were no gate. Seat layouts are cached (they do not change during a sale).
 */
export class BookingGate {
  readonly stats: GateStats = { failures: 0, refused: 0, passed: 0, unknown: 0 }
  /** Shared by concurrent claims while it loads, as the store's event cache. */
  private readonly layouts = new BoundedMap<string, { layout: Promise<SeatPlace[]>; until: number }>(1000)

  constructor(
    readonly gate: ClaimGate,
    private readonly store: SeatStore,
    private readonly log?: (event: string, fields: Record<string, unknown>) => void,
  ) {}

  /** The gate's candidates for a claim of these seats: the same seats asked for again and again in a rush. */
  private readonly nearest = new BoundedMap<string, string[]>(10_000)

  private async candidates(event: string, seats: string[]): Promise<string[]> {
    const key = `${event}\n${seats.join(',')}`
    let found = this.nearest.get(key)
    if (found === undefined) {
      found = nearestSeats(await this.layout(event), seats).map(seatUnit)
      this.nearest.set(key, found)
    }
    return found
  }

  /** Loads the event's seat layout ahead of its first claim (the layout cache otherwise fills on one). */
  async prepare(event: string): Promise<void> {
    await this.layout(event)
  }

  private layout(event: string): Promise<SeatPlace[]> {
    const cached = this.layouts.get(event)
    if (cached !== undefined && cached.until > Date.now()) return cached.layout
    const layout = this.store.seatMap(event).then((seats) => seats.map(({ seat, row, number }) => ({ seat, row, number })))
    this.layouts.set(event, { layout, until: Date.now() + 60_000 })
    layout.catch(() => this.layouts.delete(event))
    return layout
  }

  private failed(call: string, err: unknown): void {
    this.stats.failures++
    this.log?.('gate_unavailable', { call, message: err instanceof Error ? err.message : String(err) })
  }

  /** Asks the gate; 'unknown' also when the gate cannot be reached. */
  async claim(input: { event: string; hold: string; seats: string[]; items?: ItemClaim[]; ttlMs: number }): Promise<GateClaim> {
    try {
      const candidates = input.seats.length > 0 ? await this.candidates(input.event, input.seats) : []
      const answer = await this.gate.claim({
        event: input.event,
        hold: input.hold,
        units: claimUnits(input.seats, input.items),
        ttlMs: input.ttlMs,
        candidates,
        nearest: Math.max(input.seats.length, 4),
      })
      if (answer.kind === 'gone') this.stats.refused++
      else if (answer.kind === 'pass') this.stats.passed++
      else this.stats.unknown++
      return answer
    } catch (err) {
      this.failed('claim', err)
      return { kind: 'unknown' }
    }
  }

  async release(event: string, hold: string): Promise<void> {
    await this.gate.release(event, hold).catch((err) => this.failed('release', err))
  }

  async sold(hold: Hold): Promise<void> {
    await this.gate.sold(hold.eventId, hold.id, holdUnits(hold)).catch((err) => this.failed('sold', err))
  }
}
