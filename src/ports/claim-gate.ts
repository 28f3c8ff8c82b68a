// The ClaimGate port: what an event has left to claim, kept in front of PostgreSQL so that a claim
// that cannot succeed is answered without touching the database. The gate is never the record:
// PostgreSQL decides every claim that passes it, and a reconciler (src/booking/reconciler.ts) repairs
// the gate from PostgreSQL every few seconds. Redis and the in-process memory store implement it;
// test/contract/claim-gate.ts holds them to it.
//
// Stock is counted in units: a seat is the unit "seat:A1" of capacity 1, a counted item (a room type on
// one night, a general-admission tier) is "item:<id>" of capacity n. A hold claims several units at
// once, with quantities, all or nothing.

/** One unit of stock and how many of it a hold takes. */
export interface GateUnit {
  unit: string
  quantity: number
}

export type GateClaim =
  /** Every unit had enough left: the gate marked them claimed by the hold (until ttlMs); the database decides. */
  | { kind: 'pass' }
  /** Some units have too little left (`left` of each): nothing was marked; `nearest` are free candidates, in their order. */
  | { kind: 'gone'; gone: { unit: string; left: number }[]; nearest: string[] }
  /** The gate knows no stock for this event or one of the units (not loaded yet, forgotten): ask the database. */
  | { kind: 'unknown' }

/** An event's stock as the gate counts it (units of quantity: seats, nights, tickets). */
export interface StockCounts {
  free: number
  held: number
  sold: number
  /** When the gate was last reconciled with the database, ms on the gate's clock. */
  reconciledAt: number
  /** Repairs the reconcilers made since the gate was (re)built: how often it was wrong. */
  repairs: number
}

/** What PostgreSQL says an event has: the gate is rebuilt from it. */
export interface StockSnapshot {
  units: { unit: string; capacity: number; sold: number }[]
  /** Live holds only (active, not expired on the database's clock). */
  holds: { id: string; expiresAt: number; units: GateUnit[] }[]
}

export interface ClaimInput {
  event: string
  hold: string
  units: GateUnit[]
  /** How long the units stay claimed unless sold or released: the hold's length. */
  ttlMs: number
  /** Units to offer instead when some are gone, best first (the gate returns the first `nearest` free ones). */
  candidates?: string[]
  nearest?: number
  /** Time in ms; left out, the gate uses its own clock (Redis TIME). */
  now?: number
}

export interface ReconcileResult {
  /** Units whose quantity left the gate had wrong, plus holds it had to add or drop. */
  repairs: number
  /** The gate knew nothing of the event (first start, a flushed or new Redis) and was built afresh. */
  rebuilt: boolean
}

export interface ClaimGate {
  /** One atomic step: refuse if any unit is gone, else mark them all claimed by the hold. */
  claim(input: ClaimInput): Promise<GateClaim>
  /** The database refused the claim, or the hold was released, expired or refunded: its units come back. */
  release(event: string, hold: string, now?: number): Promise<void>
  /** The hold was confirmed: its units are taken for good (`units` in case the gate had already let it lapse). */
  sold(event: string, hold: string, units: GateUnit[], now?: number): Promise<void>
  /**
   * Makes the gate agree with the database. Holds the gate marked less than `graceMs` ago and the
   * database does not know yet are in flight and kept. Returns how much it had to repair.
   */
  reconcile(event: string, snapshot: StockSnapshot, graceMs: number, now?: number): Promise<ReconcileResult>
  /** The event's counts, or undefined if the gate holds no stock for it. Holds lapse here too. */
  counts(event: string, now?: number): Promise<StockCounts | undefined>
}
