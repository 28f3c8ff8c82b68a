// The SeatStore port: the booking origin's record of truth. PostgreSQL implements it (the server
// through the `postgres` driver, or embedded PGlite for `npm start`), with the same SQL files.
// An event sells numbered seats, counted items (a room type per night, a general-admission tier, each
// with a quantity), or both; one hold may claim several of either, all or nothing.
import type { StockSnapshot } from './claim-gate.js'

export interface EventInfo {
  id: string
  name: string
  room: string
  priceCents: number
  holdSeconds: number
  maxPerVisitor: number
}

export interface SeatView {
  seat: string
  row: string
  number: number
  status: 'free' | 'held' | 'sold'
}

/** A counted item (a room type on one night, a general-admission tier) and its units. */
export interface ItemView {
  item: string
  name: string
  total: number
  /** Units not held or sold; units of expired holds count as free. */
  free: number
  held: number
  sold: number
}

/** A ticket of a confirmed hold: one per seat, and one per unit of an item (numbered 1 .. total per item). */
export type Ticket = { id: number; seat: string } | { id: number; item: string; serial: number }

/** An item's key, as clients name it ("night-12", "ga"): letters, digits and . _ -, at most 40. */
export const ITEM_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/

/** A counted item and how many of it a hold claims. */
export interface ItemClaim {
  item: string
  quantity: number
}

export interface Hold {
  id: string
  eventId: string
  holder: string
  seats: string[]
  /** Counted items claimed by the hold (empty for a seats-only hold). */
  items: ItemClaim[]
  expiresAt: string
  status: 'active' | 'released' | 'confirmed'
  /** Active and unexpired on the database's clock. */
  live: boolean
  priceCents: number
  room: string
}

/** Expected outcomes of a claim are values, not errors. */
export type HoldOutcome =
  | { kind: 'held'; hold: Hold }
  | { kind: 'taken'; taken: string[]; nearest: string[] }
  | { kind: 'limit'; limit: number; current: number }
  | { kind: 'unknown-seats'; unknown: string[] }
  /** Some counted items have fewer left than the hold asked for. */
  | { kind: 'short'; short: { item: string; wanted: number; left: number }[] }
  | { kind: 'unknown-items'; unknown: string[] }

export interface Payment {
  key: string
  holdId: string
  holder: string
  amountCents: number
  status: 'pending' | 'confirmed' | 'refunded' | 'failed'
  chargeId: string | null
  responseStatus: number | null
  response: unknown
}

export interface StoredAnswer {
  status: number
  body: unknown
}

export interface SeatStore {
  event(id: string): Promise<EventInfo | undefined>
  /** The ids of every event. */
  eventIds(): Promise<string[]>
  seatMap(eventId: string): Promise<SeatView[]>
  /** The event's counted items, by key. */
  itemMap(eventId: string): Promise<ItemView[]>
  /**
   * All or nothing; the per-visitor limit counts live holds and purchases: each seat and each unit of
   * an item's quantity counts one toward the event's maxPerVisitor. `id` is the new hold's id
   * (the gate marks units under it before the database decides); left out, the store makes one.
   */
  hold(input: { event: EventInfo; holder: string; seats: string[]; items?: ItemClaim[]; id?: string }): Promise<HoldOutcome>
  getHold(id: string): Promise<Hold | undefined>
  /** Starts a checkout for an idempotency key, or returns the checkout that key already started. */
  beginPayment(input: { key: string; holdId: string; holder: string; amountCents: number }): Promise<Payment | undefined>
  getPayment(key: string): Promise<Payment | undefined>
  /**
   * Sells the hold's seats and item units and issues tickets, only while the hold is still the
   * visitor's; in the same transaction, marks the payment confirmed with the answer `answer(tickets)`.
   * Returns undefined when the hold was lost (expired and taken, or released): nothing is written.
   */
  book(input: {
    hold: Hold
    paymentKey: string
    chargeId: string
    answer: (tickets: Ticket[]) => StoredAnswer
  }): Promise<StoredAnswer | undefined>
  finishPayment(key: string, status: 'refunded' | 'failed', chargeId: string | null, answer: StoredAnswer): Promise<void>
  /** Gives the seats and item units back; returns the seats freed, in seat order. */
  release(holdId: string, holder: string): Promise<string[]>
  /** Frees expired holds (housekeeping); returns how many units (seats and item units) it freed. */
  sweep(limit?: number): Promise<number>
  /** What the event has, for rebuilding the claim gate: units ("seat:A1", "item:night-12"), sold, live holds. */
  stockSnapshot(eventId: string): Promise<StockSnapshot>
  invariant(eventId: string): Promise<{ sold: number; tickets: number; paid: number }>
  close(): Promise<void>
}
