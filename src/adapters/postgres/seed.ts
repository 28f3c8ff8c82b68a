// Creates an event and its seats (idempotent): the demo event for `npm start`, and test events.
import type { Db } from './db.js'
import { statement as sql } from './statements.js'

export interface EventSeed {
  id: string
  name: string
  room: string
  priceCents: number
  holdSeconds?: number
  maxPerVisitor?: number
  rows: string[]
  seatsPerRow: number
}

export async function seedEvent(db: Db, e: EventSeed): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(sql('event-create'), [e.id, e.name, e.room, e.priceCents, e.holdSeconds ?? 600, e.maxPerVisitor ?? 4])
    await tx.query(sql('seats-create'), [e.id, e.rows, e.seatsPerRow])
  })
}
