// ClaimGate in this process's memory (npm start, one origin): the same rule as the Redis scripts
// (src/adapters/redis/lua/gate-*.lua), step for step; test/contract/claim-gate.ts holds both to it.
import type { ClaimGate, ClaimInput, GateClaim, GateUnit, ReconcileResult, StockCounts, StockSnapshot } from '../../ports/claim-gate.js'

/** Lapsed holds given back per call, at most: a call's cost stays bounded. */
export const LAPSE_BATCH = 64

interface GateHold {
  expiresAt: number
  bornAt: number
  units: GateUnit[]
}

interface EventGate {
  left: Map<string, number>
  holds: Map<string, GateHold>
  free: number
  held: number
  sold: number
  reconciledAt: number
  repairs: number
}

export class MemoryClaimGate implements ClaimGate {
  private readonly events = new Map<string, EventGate>()

  constructor(private readonly clock: () => number = Date.now) {}

  /** Gives back the units of holds whose time ran out (at most LAPSE_BATCH, earliest first). */
  private lapse(g: EventGate, now: number): void {
    const lapsed: [string, GateHold][] = []
    for (const entry of g.holds) if (entry[1].expiresAt <= now) lapsed.push(entry)
    if (lapsed.length === 0) return
    lapsed.sort((a, b) => a[1].expiresAt - b[1].expiresAt || (a[0] < b[0] ? -1 : 1))
    for (const [id] of lapsed.slice(0, LAPSE_BATCH)) this.giveBack(g, id)
  }

  private giveBack(g: EventGate, id: string): void {
    const h = g.holds.get(id)
    if (h === undefined) return
    g.holds.delete(id)
    for (const u of h.units) {
      g.left.set(u.unit, (g.left.get(u.unit) ?? 0) + u.quantity)
      g.held -= u.quantity
      g.free += u.quantity
    }
  }

  async claim(input: ClaimInput): Promise<GateClaim> {
    const g = this.events.get(input.event)
    if (g === undefined) return { kind: 'unknown' }
    const now = input.now ?? this.clock()
    this.lapse(g, now)
    if (g.holds.has(input.hold)) return { kind: 'pass' }
    const gone: { unit: string; left: number }[] = []
    for (const u of input.units) {
      const left = g.left.get(u.unit)
      if (left === undefined) return { kind: 'unknown' }
      if (left < u.quantity) gone.push({ unit: u.unit, left })
    }
    if (gone.length > 0) {
      const nearest: string[] = []
      for (const c of input.candidates ?? []) {
        if (nearest.length >= (input.nearest ?? 0)) break
        if ((g.left.get(c) ?? 0) > 0) nearest.push(c)
      }
      return { kind: 'gone', gone, nearest }
    }
    for (const u of input.units) {
      g.left.set(u.unit, (g.left.get(u.unit) as number) - u.quantity)
      g.held += u.quantity
      g.free -= u.quantity
    }
    g.holds.set(input.hold, { expiresAt: now + input.ttlMs, bornAt: now, units: input.units.map((u) => ({ ...u })) })
    return { kind: 'pass' }
  }

  async release(event: string, hold: string, now?: number): Promise<void> {
    const g = this.events.get(event)
    if (g === undefined) return
    this.lapse(g, now ?? this.clock())
    this.giveBack(g, hold)
  }

  async sold(event: string, hold: string, units: GateUnit[], now?: number): Promise<void> {
    const g = this.events.get(event)
    if (g === undefined) return
    this.lapse(g, now ?? this.clock())
    const h = g.holds.get(hold)
    if (h !== undefined) {
      g.holds.delete(hold)
      g.held -= h.units.reduce((n, u) => n + u.quantity, 0)
    } else {
      // The gate had let the hold lapse (its clock ran ahead of the database's): take the units again.
      for (const u of units) {
        g.left.set(u.unit, (g.left.get(u.unit) ?? 0) - u.quantity)
        g.free -= u.quantity
      }
    }
    g.sold += units.reduce((n, u) => n + u.quantity, 0)
  }

  async reconcile(event: string, snapshot: StockSnapshot, graceMs: number, now?: number): Promise<ReconcileResult> {
    const at = now ?? this.clock()
    const old = this.events.get(event)
    const known = old !== undefined
    let repairs = 0
    const holds = new Map<string, GateHold>()
    const dbHolds = new Set(snapshot.holds.map((h) => h.id))
    for (const h of snapshot.holds) {
      const had = old?.holds.get(h.id)
      if (had === undefined) repairs++
      holds.set(h.id, { expiresAt: h.expiresAt, bornAt: had?.bornAt ?? at, units: h.units.map((u) => ({ ...u })) })
    }
    // Holds the gate marked a moment ago and the database has not written yet are in flight: kept.
    for (const [id, h] of old?.holds ?? []) {
      if (dbHolds.has(id)) continue
      if (at - h.bornAt < graceMs && h.expiresAt > at) holds.set(id, h)
      else repairs++
    }
    const left = new Map<string, number>()
    let sold = 0
    for (const u of snapshot.units) {
      left.set(u.unit, u.capacity - u.sold)
      sold += u.sold
    }
    let held = 0
    for (const h of holds.values()) {
      for (const u of h.units) {
        left.set(u.unit, (left.get(u.unit) ?? 0) - u.quantity)
        held += u.quantity
      }
    }
    for (const [unit, n] of left) if (old?.left.get(unit) !== n) repairs++
    for (const unit of old?.left.keys() ?? []) if (!left.has(unit)) repairs++
    let free = 0
    for (const n of left.values()) free += n
    const total = known ? (old as EventGate).repairs + repairs : 0
    this.events.set(event, { left, holds, free, held, sold, reconciledAt: at, repairs: total })
    return known ? { repairs, rebuilt: false } : { repairs: 0, rebuilt: true }
  }

  async counts(event: string, now?: number): Promise<StockCounts | undefined> {
    const g = this.events.get(event)
    if (g === undefined) return undefined
    this.lapse(g, now ?? this.clock())
    return { free: g.free, held: g.held, sold: g.sold, reconciledAt: g.reconciledAt, repairs: g.repairs }
  }

  /** Forgets everything, as a flushed Redis does (tests). */
  forget(): void {
    this.events.clear()
  }
}
