// The SeatStore port: the booking origin's record of truth. PostgreSQL implements it (the server
// through the `postgres` driver, or embedded PGlite for `npm start`), with the same SQL files.

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

export interface Hold {
  id: string
  eventId: string
  holder: string
  seats: string[]
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
  seatMap(eventId: string): Promise<SeatView[]>
  /** All or nothing; the per-visitor limit counts live holds and purchases. */
  hold(input: { event: EventInfo; holder: string; seats: string[] }): Promise<HoldOutcome>
  getHold(id: string): Promise<Hold | undefined>
  /** Starts a checkout for an idempotency key, or returns the checkout that key already started. */
  beginPayment(input: { key: string; holdId: string; holder: string; amountCents: number }): Promise<Payment | undefined>
  getPayment(key: string): Promise<Payment | undefined>
  /**
   * Sells the hold's seats and issues tickets, only while the hold is still the visitor's; in the same
   * transaction, marks the payment confirmed with the answer `answer(tickets)`. Returns undefined when
   * the hold was lost (expired and taken, or released): nothing is written.
   */
  book(input: {
    hold: Hold
    paymentKey: string
    chargeId: string
    answer: (tickets: { id: number; seat: string }[]) => StoredAnswer
  }): Promise<StoredAnswer | undefined>
  finishPayment(key: string, status: 'refunded' | 'failed', chargeId: string | null, answer: StoredAnswer): Promise<void>
  /** Gives the seats back; returns the seats freed. */
  release(holdId: string, holder: string): Promise<string[]>
  /** Frees expired holds (housekeeping); returns how many seats it freed. */
  sweep(limit?: number): Promise<number>
  invariant(eventId: string): Promise<{ sold: number; tickets: number; paid: number }>
  close(): Promise<void>
}
