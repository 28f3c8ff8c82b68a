// The booking origin's side of the claim gate (src/ports/claim-gate.ts): the units a hold asks for,
// the seats to offer instead, and the gate calls of a claim's life, each of which may fail without
// harm. A gate that is down or wrong costs the database work, never a wrong sale: PostgreSQL decides
// every claim the gate lets through, and the reconciler (./reconciler.ts) repairs the gate.

import { BoundedMap } from '../core/bounded-map.js'
import type { ClaimGate, GateClaim, GateUnit } from '../ports/claim-gate.js'
import type { Hold, ItemClaim, SeatStore } from '../ports/seat-store.js'
import { MAX_SEATS_PER_REQUEST as MAX_SEATS_PER_CLAIM } from './claims.js'

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
  const best: Ranked[] = []
  for (const s of layout) {
    if (asked.has(s.seat)) continue
    let d = Number.POSITIVE_INFINITY
    for (const a of anchors) d = Math.min(d, distance(s, a))
    keepBest(best, count, s.seat, d)
  }
  return best.map((b) => b.seat)
}

/** A seat and its distance to a claim. */
type Ranked = { seat: string; d: number }

/** How far seat s is from seat a: a row apart counts as a thousand seats along one. */
const distance = (s: SeatPlace, a: SeatPlace) => Math.abs(s.row.charCodeAt(0) - a.row.charCodeAt(0)) * 1000 + Math.abs(s.number - a.number)

/** Whether a seat at distance d comes before `other`: nearer, then by name. */
const before = (d: number, seat: string, other: Ranked) => d < other.d || (d === other.d && seat < other.seat)

/** Puts the seat into `best` (best first, at most `length` long) if it is among the best. */
function keepBest(best: Ranked[], length: number, seat: string, d: number): void {
  if (best.length === length && !before(d, seat, best[length - 1] as Ranked)) return
  let i = best.length
  while (i > 0 && before(d, seat, best[i - 1] as Ranked)) i--
  best.splice(i, 0, { seat, d })
  if (best.length > length) best.pop()
}

/**
 * nearestSeats for one layout, fast: each seat's own nearest are worked out once, when a claim first
 * asks for it (one pass over the layout), and a claim's are then merged from its seats' lists. A pass
 * per claim cost 7 µs with 40 seats, 80 with 1,000 and 280 with 5,200, more than the rest of a
 * doomed claim; a merge costs about the same whatever the venue.
 *
 * The same answer as nearestSeats (test/gate-origin.test.ts compares them): a seat's distance to a
 * claim is its least distance to one of the claim's seats, so the claim's nearest are among its seats'
 * own nearest, as long as each list is long enough to hold the claim's other seats too (listLength).
 */
export class NearestSeats {
  /** Each seat's nearest with their distances, best first: as long as any claim can need. */
  private readonly lists = new Map<string, Ranked[]>()
  /** The layout by row (its first letter's code) and number: a seat's nearest are around it. */
  private readonly ordered: SeatPlace[]
  private readonly at = new Map<string, number>()
  private readonly units = new BoundedMap<string, string[]>(10_000)

  constructor(
    layout: readonly SeatPlace[],
    private readonly listLength = CANDIDATES + MAX_SEATS_PER_CLAIM,
  ) {
    this.ordered = [...layout].sort(
      (a, b) => a.row.charCodeAt(0) - b.row.charCodeAt(0) || a.number - b.number || (a.seat < b.seat ? -1 : a.seat > b.seat ? 1 : 0),
    )
    for (const [i, s] of this.ordered.entries()) this.at.set(s.seat, i)
  }

  /** A claim's candidates as gate units (CANDIDATES of them), remembered: a rush asks for the same seats again and again. */
  candidateUnits(seats: readonly string[]): string[] {
    const key = seats.join(',')
    let found = this.units.get(key)
    if (found === undefined) {
      found = this.nearest(seats).map(seatUnit)
      this.units.set(key, found)
    }
    return found
  }

  /** The `count` seats nearest to `wanted` (not counting them), best first. */
  nearest(wanted: readonly string[], count = CANDIDATES): string[] {
    if (count + wanted.length - 1 > this.listLength) return nearestSeats(this.ordered, wanted, count)
    const asked = new Set(wanted)
    const lists: Ranked[][] = []
    for (const w of asked) if (this.at.has(w)) lists.push(this.listOf(w))
    if (lists.length === 1) {
      // One seat (or the same seat twice): its own list, less nothing.
      const out: string[] = []
      for (const e of lists[0] as Ranked[]) {
        if (out.length === count) break
        out.push(e.seat)
      }
      return out
    }
    const heads = lists.map(() => 0)
    const out: string[] = []
    const seen = new Set<string>()
    while (out.length < count) {
      // The best head of the lists: the least distance, then the name (as nearestSeats orders them).
      let best = -1
      let head: Ranked | undefined
      for (let i = 0; i < lists.length; i++) {
        const h = (lists[i] as Ranked[])[heads[i] as number]
        if (h !== undefined && (head === undefined || before(h.d, h.seat, head))) {
          best = i
          head = h
        }
      }
      if (head === undefined) break
      heads[best] = (heads[best] as number) + 1
      if (asked.has(head.seat) || seen.has(head.seat)) continue
      seen.add(head.seat)
      out.push(head.seat)
    }
    return out
  }

  /** A seat's nearest, worked out on its first claim: the layout read outward from it, so that far seats are passed over at once. */
  private listOf(seat: string): Ranked[] {
    let list = this.lists.get(seat)
    if (list !== undefined) return list
    list = []
    const ordered = this.ordered
    const i = this.at.get(seat) as number
    const a = ordered[i] as SeatPlace
    const row = a.row.charCodeAt(0)
    const length = this.listLength
    const consider = (s: SeatPlace) => keepBest(list as Ranked[], length, s.seat, distance(s, a))
    // Rows only get further away in either direction: once a full list's worst is nearer than a seat's
    // row alone, nothing further that way can join it.
    const beyond = (s: SeatPlace) => {
      const best = list as Ranked[]
      return best.length === length && Math.abs(s.row.charCodeAt(0) - row) * 1000 > (best[length - 1] as Ranked).d
    }
    let down = i - 1
    let up = i + 1
    while (down >= 0 || up < ordered.length) {
      if (down >= 0) {
        const s = ordered[down] as SeatPlace
        if (beyond(s)) down = -1
        else {
          consider(s)
          down--
        }
      }
      if (up < ordered.length) {
        const s = ordered[up] as SeatPlace
        if (beyond(s)) up = ordered.length
        else {
          consider(s)
          up++
        }
      }
    }
    this.lists.set(seat, list)
    return list
  }
}

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
  /** Each event's seat layout as a NearestSeats, shared by concurrent claims while it loads (as the store's event cache). */
  private readonly layouts = new BoundedMap<string, { nearest: Promise<NearestSeats>; until: number }>(1000)

  constructor(
    readonly gate: ClaimGate,
    private readonly store: SeatStore,
    private readonly log?: (event: string, fields: Record<string, unknown>) => void,
  ) {}

  /**
   * The gate's candidates for a claim of these seats, remembered here as well as in the layout: a claim
   * whose seats were asked for before does not touch the layout, nor its 60-s reload (a statement).
   */
  private readonly asked = new BoundedMap<string, string[]>(10_000)

  private async candidates(event: string, seats: string[]): Promise<string[]> {
    const key = `${event}\n${seats.join(',')}`
    let found = this.asked.get(key)
    if (found === undefined) {
      found = (await this.layout(event)).candidateUnits(seats)
      this.asked.set(key, found)
    }
    return found
  }

  /** Loads the event's seat layout ahead of its first claim (the layout cache otherwise fills on one). */
  async prepare(event: string): Promise<void> {
    await this.layout(event)
  }

  private layout(event: string): Promise<NearestSeats> {
    const cached = this.layouts.get(event)
    if (cached !== undefined && cached.until > Date.now()) return cached.nearest
    const nearest = this.store
      .seatMap(event)
      .then((seats) => new NearestSeats(seats.map(({ seat, row, number }) => ({ seat, row, number }))))
    this.layouts.set(event, { nearest, until: Date.now() + 60_000 })
    nearest.catch(() => this.layouts.delete(event))
    return nearest
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
