// Creates an event, its seats and its counted items (idempotent): the demo events for `npm start`,
// and test events.
import { ITEM_KEY } from '../../ports/seat-store.js'
import type { Db } from './db.js'
import { statement as sql } from './statements.js'

/** A counted item: a room type on one night, a general-admission tier. */
export interface ItemSeed {
  /** The key clients name it by, e.g. "night-12": letters, digits and . _ - (at most 40). */
  id: string
  name?: string
  /** How many units it has in all. */
  quantity: number
  /**
   * How many rows its stock is split into (1 to 64, default 1): several spread the claims of a very
   * hot item over several row locks (see anteroom_take in migrations/004). At most one per unit.
   */
  buckets?: number
}

export interface EventSeed {
  id: string
  name: string
  room: string
  priceCents: number
  holdSeconds?: number
  maxPerVisitor?: number
  /** Seat rows (A, B, ...); none for an event of counted items only. */
  rows?: string[]
  seatsPerRow?: number
  items?: ItemSeed[]
}

export const MAX_BUCKETS = 64

export async function seedEvent(db: Db, e: EventSeed): Promise<void> {
  for (const item of e.items ?? []) {
    if (!ITEM_KEY.test(item.id)) throw new TypeError(`item ${JSON.stringify(item.id)}: a key of letters, digits and . _ - (at most 40)`)
    if (!Number.isInteger(item.quantity) || item.quantity < 0) throw new TypeError(`item ${item.id}: quantity must be a whole number`)
    const buckets = item.buckets ?? 1
    if (!Number.isInteger(buckets) || buckets < 1 || buckets > MAX_BUCKETS) {
      throw new TypeError(`item ${item.id}: buckets must be a whole number from 1 to ${MAX_BUCKETS}`)
    }
  }
  await db.transaction(async (tx) => {
    await tx.query(sql('event-create'), [e.id, e.name, e.room, e.priceCents, e.holdSeconds ?? 600, e.maxPerVisitor ?? 4])
    if (e.rows !== undefined && e.rows.length > 0) await tx.query(sql('seats-create'), [e.id, e.rows, e.seatsPerRow ?? 10])
    for (const item of e.items ?? []) {
      // No empty buckets: an item of 3 units has at most 3.
      const buckets = Math.max(1, Math.min(item.buckets ?? 1, item.quantity))
      await tx.query(sql('items-create'), [e.id, item.id, item.name ?? item.id, item.quantity, buckets])
    }
  })
}
