// SeatStore on PostgreSQL: every rule is a conditional write in ./sql, decided by the database on
// its own clock. Transactions run with short lock and statement timeouts, and serialization
// failures and deadlocks (40001, 40P01) are retried a few times with jitter.
import { randomUUID } from 'node:crypto'
import { BoundedMap } from '../../core/bounded-map.js'
import { AnteroomError } from '../../core/errors.js'
import type { StockSnapshot } from '../../ports/claim-gate.js'
import type {
  EventInfo,
  Hold,
  HoldOutcome,
  ItemClaim,
  ItemView,
  Payment,
  SeatStore,
  SeatView,
  StoredAnswer,
  Ticket,
} from '../../ports/seat-store.js'
import { type Db, type Sql, sqlState } from './db.js'
import { statement as sql } from './statements.js'

const RETRIED = new Set(['40001', '40P01'])
const MAX_ATTEMPTS = 5

export interface PostgresSeatStoreOptions {
  lockTimeoutMs?: number
  statementTimeoutMs?: number
}

/** Thrown inside a transaction to roll it back and return a value. */
class Rollback<T> {
  constructor(readonly value: T) {}
}

interface HoldRow {
  id: string
  event_id: string
  holder: string
  seats: string[]
  expires_at: Date | string
  status: Hold['status']
  live?: boolean
  price_cents?: number
  room?: string
  items?: ItemClaim[] | string
}

function iso(t: Date | string): string {
  return t instanceof Date ? t.toISOString() : new Date(t).toISOString()
}

/** A JSON column, whichever way the driver hands it over. */
function json<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T
}

/** Items as a hold keeps them: one entry per key, sorted by key (the order claims lock them in). */
export function byKey(items: ItemClaim[]): ItemClaim[] {
  const sum = new Map<string, number>()
  for (const { item, quantity } of items) sum.set(item, (sum.get(item) ?? 0) + quantity)
  return [...sum].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([item, quantity]) => ({ item, quantity }))
}

function toHold(r: HoldRow, event?: EventInfo): Hold {
  return {
    id: r.id,
    eventId: r.event_id,
    holder: r.holder,
    seats: r.seats,
    items: json<ItemClaim[] | undefined>(r.items) ?? [],
    expiresAt: iso(r.expires_at),
    status: r.status,
    live: r.live ?? true,
    priceCents: r.price_cents ?? event?.priceCents ?? 0,
    room: r.room ?? event?.room ?? '',
  }
}

function toPayment(r: Record<string, unknown>): Payment {
  return {
    key: r.idempotency_key as string,
    holdId: r.hold_id as string,
    holder: r.holder as string,
    amountCents: r.amount_cents as number,
    status: r.status as Payment['status'],
    chargeId: (r.charge_id as string | null) ?? null,
    responseStatus: (r.response_status as number | null) ?? null,
    response: typeof r.response === 'string' ? JSON.parse(r.response) : (r.response ?? null),
  }
}

/**
 * A claim the database refused (the hold function's answer, and each of a lane batch's): what is
 * taken, over the limit, unknown or short. Undefined for any other answer.
 */
export function claimRefusal(r: Record<string, unknown>): HoldOutcome | undefined {
  switch (r.kind) {
    case 'taken':
      return { kind: 'taken', taken: r.taken as string[], nearest: r.nearest as string[] }
    case 'limit':
      return { kind: 'limit', limit: r.limit as number, current: r.current as number }
    case 'unknown-seats':
      return { kind: 'unknown-seats', unknown: r.unknown as string[] }
    case 'short':
      return { kind: 'short', short: r.short as { item: string; wanted: number; left: number }[] }
    case 'unknown-items':
      return { kind: 'unknown-items', unknown: r.unknown as string[] }
    default:
      return undefined
  }
}

export class PostgresSeatStore implements SeatStore {
  private readonly lockTimeoutMs: number
  private readonly statementTimeoutMs: number

  constructor(
    private readonly db: Db,
    options: PostgresSeatStoreOptions = {},
  ) {
    this.lockTimeoutMs = options.lockTimeoutMs ?? 2000
    this.statementTimeoutMs = options.statementTimeoutMs ?? 5000
  }

  /** Runs fn, retrying serialization failures and deadlocks a few times with jitter. */
  private async retrying<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn()
      } catch (err) {
        if (err instanceof Rollback) return err.value as T
        const state = sqlState(err)
        if (state !== undefined && RETRIED.has(state) && attempt < MAX_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt))
          continue
        }
        if (state === '55P03' || state === '57014' || (state !== undefined && RETRIED.has(state))) {
          throw new AnteroomError('ERR_DB_BUSY', 'The seats are busy; please try again', { cause: err })
        }
        throw err
      }
    }
  }

  /** A transaction with short lock and statement timeouts, retried on serialization failures and deadlocks. */
  private tx<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    return this.retrying(() =>
      this.db.transaction(async (tx) => {
        await tx.query(sql('tx-timeouts'), [`${this.lockTimeoutMs}ms`, `${this.statementTimeoutMs}ms`])
        return fn(tx)
      }),
    )
  }

  /**
   * Events change rarely: each is read at most once every few seconds, not on every request, and
   * concurrent requests for one that is not cached share one read (a rush starts with a cold cache).
   */
  private readonly events = new BoundedMap<string, { event: Promise<EventInfo | undefined>; until: number }>(10_000)

  event(id: string): Promise<EventInfo | undefined> {
    const cached = this.events.get(id)
    if (cached !== undefined && cached.until > Date.now()) return cached.event
    const event = this.readEvent(id)
    this.events.set(id, { event, until: Date.now() + 5000 })
    // A failed read is not kept.
    event.catch(() => this.events.delete(id))
    return event
  }

  async eventIds(): Promise<string[]> {
    return (await this.db.query<{ id: string }>(sql('event-list'))).map((r) => r.id)
  }

  private async readEvent(id: string): Promise<EventInfo | undefined> {
    const [r] = await this.db.query<Record<string, unknown>>(sql('event-get'), [id])
    if (r === undefined) return undefined
    return {
      id: r.id as string,
      name: r.name as string,
      room: r.room as string,
      priceCents: r.price_cents as number,
      holdSeconds: r.hold_seconds as number,
      maxPerVisitor: r.max_per_visitor as number,
    }
  }

  async seatMap(eventId: string): Promise<SeatView[]> {
    const rows = await this.db.query<{ seat: string; row_label: string; number: number; status: SeatView['status'] }>(sql('seat-map'), [
      eventId,
    ])
    return rows.map((r) => ({ seat: r.seat, row: r.row_label, number: r.number, status: r.status }))
  }

  async itemMap(eventId: string): Promise<ItemView[]> {
    const rows = await this.db.query<{ item: string; name: string; total: number; sold: number; held: number }>(sql('item-map'), [eventId])
    return rows.map((r) => ({ item: r.item, name: r.name, total: r.total, free: r.total - r.sold - r.held, held: r.held, sold: r.sold }))
  }

  /** One statement, one round trip, whatever the outcome (see anteroom_claim in migrations/004). */
  async hold(input: { event: EventInfo; holder: string; seats: string[]; items?: ItemClaim[]; id?: string }): Promise<HoldOutcome> {
    const { event, holder, seats } = input
    const items = byKey(input.items ?? [])
    const id = input.id ?? randomUUID()
    const [row] = await this.retrying(() =>
      this.db.query<{ result: unknown }>(sql('hold'), [
        event.id,
        holder,
        seats,
        id,
        `${this.lockTimeoutMs}ms`,
        Math.max(seats.length, 4),
        JSON.stringify(items),
      ]),
    )
    const r = json<Record<string, unknown>>(row?.result)
    switch (r.kind) {
      case 'held':
        return {
          kind: 'held',
          hold: toHold({ id, event_id: event.id, holder, seats, items, expires_at: r.expires_at as string, status: 'active' }, event),
        }
      default: {
        const refused = claimRefusal(r)
        if (refused === undefined) throw new AnteroomError('ERR_NOT_FOUND', `No such event: ${event.id}`)
        return refused
      }
    }
  }

  async getHold(id: string): Promise<Hold | undefined> {
    const [r] = await this.db.query<HoldRow>(sql('hold-get'), [id])
    return r === undefined ? undefined : toHold(r)
  }

  async beginPayment(input: { key: string; holdId: string; holder: string; amountCents: number }): Promise<Payment | undefined> {
    const fresh = await this.db.query(sql('payment-begin'), [input.key, input.holdId, input.holder, input.amountCents])
    if (fresh.length > 0) return undefined
    return this.getPayment(input.key)
  }

  async getPayment(key: string): Promise<Payment | undefined> {
    const [r] = await this.db.query<Record<string, unknown>>(sql('payment-get'), [key])
    return r === undefined ? undefined : toPayment(r)
  }

  async book(input: {
    hold: Hold
    paymentKey: string
    chargeId: string
    answer: (tickets: Ticket[]) => StoredAnswer
  }): Promise<StoredAnswer | undefined> {
    const { hold } = input
    const units = hold.items.reduce((n, i) => n + i.quantity, 0)
    return this.tx(async (tx) => {
      // Seats first, then items: the order claims lock them in.
      const sold = await tx.query<{ seat: string }>(sql('book-seats'), [hold.eventId, hold.id, hold.holder])
      if (sold.length !== hold.seats.length) throw new Rollback(undefined)
      let itemTickets: Ticket[] = []
      if (units > 0) {
        const [booked] = await tx.query<{ sold: number; tickets: unknown }>(sql('book-items'), [hold.id, hold.holder, input.paymentKey])
        if (booked?.sold !== units) throw new Rollback(undefined)
        itemTickets = json<{ id: string | number; item: string; serial: number }[]>(booked.tickets).map((t) => ({
          id: Number(t.id),
          item: t.item,
          serial: t.serial,
        }))
      }
      const seatTickets =
        hold.seats.length === 0
          ? []
          : await tx.query<{ id: string | number; seat: string }>(sql('tickets-issue'), [
              hold.eventId,
              hold.seats,
              hold.holder,
              hold.id,
              input.paymentKey,
            ])
      await tx.query(sql('hold-finish'), [hold.id, 'confirmed', hold.holder])
      const answer = input.answer([...seatTickets.map((t) => ({ id: Number(t.id), seat: t.seat })), ...itemTickets])
      await tx.query(sql('payment-finish'), [input.paymentKey, 'confirmed', input.chargeId, answer.status, JSON.stringify(answer.body)])
      return answer
    })
  }

  async finishPayment(key: string, status: 'refunded' | 'failed', chargeId: string | null, answer: StoredAnswer): Promise<void> {
    await this.db.query(sql('payment-finish'), [key, status, chargeId, answer.status, JSON.stringify(answer.body)])
  }

  async release(holdId: string, holder: string): Promise<string[]> {
    return this.tx(async (tx) => {
      const freed = await tx.query<{ seat: string }>(sql('hold-release'), [holdId, holder])
      await tx.query(sql('release-items'), [holdId, holder])
      await tx.query(sql('hold-finish'), [holdId, 'released', holder])
      return freed.map((r) => r.seat)
    })
  }

  async sweep(limit = 1000): Promise<number> {
    const seats = (await this.db.query(sql('sweep'), [limit])).length
    const [items] = await this.db.query<{ freed: number }>(sql('sweep-items'), [limit])
    return seats + (items?.freed ?? 0)
  }

  async stockSnapshot(eventId: string): Promise<StockSnapshot> {
    const [r] = await this.db.query<{ snapshot: unknown }>(sql('stock-snapshot'), [eventId])
    const snapshot = json<StockSnapshot>(r?.snapshot)
    return { units: snapshot.units, holds: snapshot.holds.map((h) => ({ ...h, expiresAt: Number(h.expiresAt) })) }
  }

  async invariant(eventId: string): Promise<{ sold: number; tickets: number; paid: number }> {
    const [r] = await this.db.query<{ sold: number; tickets: number; paid: number }>(sql('invariant'), [eventId])
    return { sold: r?.sold ?? 0, tickets: r?.tickets ?? 0, paid: r?.paid ?? 0 }
  }

  async close(): Promise<void> {
    await this.db.close()
  }
}
