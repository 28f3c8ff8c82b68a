// Builds the bundled booking origin: PostgreSQL (a server, or embedded PGlite), migrations, the
// demo event, a test payment provider, and admission checks against the edge's JWKS.
import { TestPaymentProvider } from '../adapters/payments/test-provider.js'
import type { Db } from '../adapters/postgres/db.js'
import { migrate } from '../adapters/postgres/migrate.js'
import { pgliteDb } from '../adapters/postgres/pglite.js'
import { postgresDb } from '../adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../adapters/postgres/seat-store.js'
import { seedEvent } from '../adapters/postgres/seed.js'
import { createOriginApp } from '../origin/app.js'

export interface BookingOptions {
  /** postgres:// URL; unset: embedded PGlite in memory. */
  databaseUrl: string | undefined
  jwksUrl: string
  issuer: string
  audience: string
  /** The demo event is sold through this room. */
  room: string
  /** The demo event's id (default "demo"). */
  eventId?: string
}

export async function buildBooking(o: BookingOptions) {
  const db: Db = o.databaseUrl ? postgresDb(o.databaseUrl) : await pgliteDb()
  await migrate(db)
  await seedEvent(db, {
    id: o.eventId ?? 'demo',
    name: 'Demo night: 40 seats',
    room: o.room,
    priceCents: 4500,
    rows: ['A', 'B', 'C', 'D'],
    seatsPerRow: 10,
  })
  const seats = new PostgresSeatStore(db)
  const app = createOriginApp({
    seats,
    payments: new TestPaymentProvider(),
    admission: { jwksUrl: o.jwksUrl, issuer: o.issuer, audience: o.audience },
  })
  // Housekeeping only: claims check expiry themselves.
  const sweeper = setInterval(() => void seats.sweep().catch(() => {}), 30_000)
  sweeper.unref()
  return {
    app,
    seats,
    async close() {
      clearInterval(sweeper)
      await seats.close()
    },
  }
}
