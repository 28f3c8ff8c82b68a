import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Db } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import type { EventInfo } from '../src/ports/seat-store.js'
import { bookingContract } from './contract/booking.js'

bookingContract('PostgreSQL server', async () => postgresDb(inject('postgresUrl'), { max: 20 }))

describe('timeouts and retries on the PostgreSQL server', () => {
  let db: Db
  beforeAll(async () => {
    db = postgresDb(inject('postgresUrl'), { max: 5 })
    await migrate(db)
  })
  afterAll(async () => {
    await db.close()
  })

  async function event(id: string) {
    await seedEvent(db, { id, name: 'Timeouts', room: 'sale', priceCents: 100, rows: ['A'], seatsPerRow: 5 })
    return (await new PostgresSeatStore(db).event(id)) as EventInfo
  }

  it('a claim that waits on a row lock longer than lock_timeout fails fast as ERR_DB_BUSY, and changes nothing', async () => {
    const e = await event(`lt${Date.now().toString(36)}`)
    const store = new PostgresSeatStore(db, { lockTimeoutMs: 100 })
    let release = () => {}
    const released = new Promise<void>((r) => {
      release = r
    })
    let locked = () => {}
    const isLocked = new Promise<void>((r) => {
      locked = r
    })
    // Another session holds the seat's row lock until we let it go.
    const blocker = db.transaction(async (tx) => {
      await tx.query('SELECT seat FROM seats WHERE event_id = $1 AND seat = $2 FOR UPDATE', [e.id, 'A1'])
      locked()
      await released
    })
    await isLocked
    await expect(store.hold({ event: e, holder: 'waiter', seats: ['A1'] })).rejects.toMatchObject({ code: 'ERR_DB_BUSY' })
    release()
    await blocker
    expect(await db.query("SELECT 1 FROM seats WHERE event_id = $1 AND status <> 'free'", [e.id])).toHaveLength(0)
    expect((await store.hold({ event: e, holder: 'waiter', seats: ['A1'] })).kind).toBe('held')
  })

  it('deadlocks and serialization failures are retried a bounded number of times', async () => {
    const e = await event(`rt${Date.now().toString(36)}`)
    let failures = 2
    // A Db that fails the first claims the way PostgreSQL reports a deadlock.
    const flaky: Db = {
      ...db,
      close: db.close.bind(db),
      transaction: db.transaction.bind(db),
      async query<T>(text: string, params?: unknown[]) {
        if (text.startsWith('-- hold.sql') && failures-- > 0) throw Object.assign(new Error('deadlock detected'), { code: '40P01' })
        return db.query<T>(text, params)
      },
    }
    const store = new PostgresSeatStore(flaky)
    expect((await store.hold({ event: e, holder: 'retry', seats: ['A2'] })).kind).toBe('held')
    expect(failures).toBe(-1)
    failures = 100
    await expect(store.hold({ event: e, holder: 'retry-2', seats: ['A3'] })).rejects.toMatchObject({ code: 'ERR_DB_BUSY' })
    expect(failures).toBe(100 - 5)
  })

  it('migrations are recorded and applied once', async () => {
    expect(await migrate(db)).toEqual([])
    const rows = await db.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version')
    expect(rows.map((r) => r.version)).toContain('001_booking.sql')
  })
})
