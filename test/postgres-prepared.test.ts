// Prepared statements on the PostgreSQL server (issue #14): postgresDb prepares every statement, and
// the driver pipelines prepared statements onto busy connections. A transaction must never share such
// a connection: when sql.begin() ran on the same pool, a BEGIN that landed behind 100 pipelined
// statements (or met socket back-pressure) was not reserved; PostgreSQL ran it, the driver answered
// UNSAFE_TRANSACTION and left the pooled connection in the open transaction, with other requests'
// statements inside it (see src/adapters/postgres/postgres-js.ts). Here a small statement pool is
// flooded with holds while holds are confirmed and released (transactions), some of them meeting a
// lock timeout and one a real deadlock that is retried: no error but the expected ones, every answer
// kept, and sold = tickets = paid.
import { createLocalJWKSet } from 'jose'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { until } from '../scripts/lib/until.js'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import type { Db } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { createBookingApp } from '../src/booking/app.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import type { EventInfo } from '../src/ports/seat-store.js'

/** Visitors, all at once; each holds a seat, then confirms or releases it, for a few rounds. */
const VISITORS = 3000
const ROUNDS = 3
const ROWS = ['A', 'B', 'C', 'D']
const SEATS = ROWS.flatMap((r) => Array.from({ length: 10 }, (_, i) => `${r}${i + 1}`))

let db: Db
let sql: postgres.Sql

beforeAll(async () => {
  // Three connections for statements, three for transactions. A pipeline of one statement behind the
  // running one: a BEGIN sent down a busy statement connection would then always find it full, so the
  // failure, if it came back, would show on nearly every transaction instead of one in thousands.
  db = postgresDb(inject('postgresUrl'), { max: 6, transactionMax: 3, maxPipeline: 1 })
  sql = postgres(inject('postgresUrl'), { max: 2, onnotice: () => {} })
  await migrate(db)
})

afterAll(async () => {
  await db?.close()
  await sql?.end({ timeout: 5 })
})

/** Resolves once check() holds, asking again right after each answer (scripts/lib/until.ts). */
const soon = (what: string, check: () => Promise<boolean>) => until(what, check, 60_000, 0)

describe('prepared statements under a rush, with transactions alongside', () => {
  it('holds flooding a small pool while holds are confirmed and released: only expected answers, nothing lost, sold = tickets = paid', async () => {
    const event = `prep${Date.now().toString(36)}`
    await seedEvent(db, { id: event, name: 'Prepared night', room: 'sale', priceCents: 2500, rows: ROWS, seatsPerRow: 10 })
    const keys = await importSigningKeys([await generateSigningJwk('edge-1')])
    const tokens = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
    const payments = new TestPaymentProvider()
    // A short lock_timeout, so that claims behind the blocker below fail fast as ERR_DB_BUSY.
    const store = new PostgresSeatStore(db, { lockTimeoutMs: 50 })
    const errors: Record<string, unknown>[] = []
    const app = createBookingApp({
      seats: store,
      payments,
      admission: { jwksUrl: 'http://127.0.0.1:1/jwks', issuer: 'anteroom', audience: 'origin', keys: createLocalJWKSet(tokens.jwks()) },
      log: (name, fields) => {
        if (name === 'origin_error') errors.push(fields)
      },
    })
    const visitors = await Promise.all(
      Array.from({ length: VISITORS }, async (_, i) => ({
        id: `p-${i}`,
        token: await tokens.sign(
          { sub: `p-${i}`, jti: `s-${i}`, room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 },
          Date.now(),
        ),
      })),
    )
    const statuses: Record<string, number> = {}
    const held: string[] = []
    const bought: { key: string; seats: string[] }[] = []
    async function call(
      what: string,
      path: string,
      token: string,
      init: { method: string; headers?: Record<string, string>; body?: unknown },
    ) {
      const res = await app.request(path, {
        method: init.method,
        headers: { 'anteroom-admission': token, 'content-type': 'application/json', ...init.headers },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      })
      // biome-ignore lint/suspicious/noExplicitAny: test responses are read field by field
      const body = (await res.json()) as Record<string, any>
      const key = `${what} ${res.status} ${body.error?.code ?? ''}`.trim()
      statuses[key] = (statuses[key] ?? 0) + 1
      return { status: res.status, body }
    }

    // A transaction that holds the row lock of a seat while the rush starts: claims of it wait 50 ms
    // and answer 503 ERR_DB_BUSY.
    let unblock = () => {}
    const unblocked = new Promise<void>((r) => {
      unblock = r
    })
    let locked = () => {}
    const isLocked = new Promise<void>((r) => {
      locked = r
    })
    const blocker = db.transaction(async (tx) => {
      await tx.query('SELECT seat FROM seats WHERE event_id = $1 AND seat = $2 FOR UPDATE', [event, 'D10'])
      locked()
      await unblocked
    })
    await isLocked

    const rush = visitors.map(async (v, i) => {
      for (let r = 0; r < ROUNDS; r++) {
        const seat = SEATS[(i * 7 + r * 13) % SEATS.length] as string
        const h = await call('hold', `/events/${event}/holds`, v.token, { method: 'POST', body: { seats: [seat] } })
        if (h.status !== 201) continue
        held.push(h.body.hold.id)
        if ((i + r) % 2 === 0) {
          const key = `prep-${v.id}-${r}-key`
          const c = await call('confirm', `/holds/${h.body.hold.id}/confirm`, v.token, {
            method: 'POST',
            headers: { 'idempotency-key': key },
          })
          if (c.status === 200) bought.push({ key, seats: h.body.hold.seats })
        } else {
          await call('release', `/holds/${h.body.hold.id}`, v.token, { method: 'DELETE' })
        }
      }
    })
    // Once ten claims have met the lock timeout, the blocked seat is let go.
    await soon('ten claims refused as ERR_DB_BUSY', async () => (statuses['hold 503 ERR_DB_BUSY'] ?? 0) >= 10)
    unblock()
    await blocker

    // Meanwhile a real deadlock, retried: a release waits for the hold's row, locked by another session,
    // which then waits for the seats the release has locked. PostgreSQL breaks the cycle by failing the
    // release (40P01) after deadlock_timeout (the other session waits 10 s before it would look), and
    // the store retries it.
    const deadlockEvent = `${event}-dl`
    await seedEvent(db, { id: deadlockEvent, name: 'Deadlock', room: 'sale', priceCents: 100, rows: ['A'], seatsPerRow: 2 })
    // The store's transactions, counted, with how each attempt ended.
    const attempts: string[] = []
    const counted: Db = {
      query: (text, params) => db.query(text, params),
      close: () => db.close(),
      transaction: (fn) =>
        db.transaction(fn).then(
          (v) => {
            attempts.push('committed')
            return v
          },
          (err: { code?: string }) => {
            attempts.push(String(err.code))
            throw err
          },
        ),
    }
    const slowStore = new PostgresSeatStore(counted)
    const e = (await slowStore.event(deadlockEvent)) as EventInfo
    const dl = await slowStore.hold({ event: e, holder: 'dl-visitor', seats: ['A1', 'A2'] })
    if (dl.kind !== 'held') throw new Error(`no hold for the deadlock: ${dl.kind}`)
    const other = await sql.reserve()
    let released: Promise<string[]> | undefined
    try {
      await other`BEGIN`
      await other`SET LOCAL deadlock_timeout = '10s'`
      await other`SELECT id FROM holds WHERE id = ${dl.hold.id} FOR UPDATE`
      released = slowStore.release(dl.hold.id, 'dl-visitor')
      await soon('the release waiting on the row lock', async () => {
        const [w] =
          await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '-- hold-finish.sql%'`
        return (w?.n ?? 0) > 0
      })
      await other`UPDATE seats SET holder = holder WHERE hold_id = ${dl.hold.id}`
      await other`ROLLBACK`
    } finally {
      other.release()
    }
    expect((await released)?.sort()).toEqual(['A1', 'A2'])
    expect(attempts).toEqual(['40P01', 'committed'])

    await Promise.all(rush)

    // Only the answers a rush may get: no UNSAFE_TRANSACTION (a 500), nothing unexpected logged.
    expect(errors).toEqual([])
    const allowed = ['hold 201', 'hold 409 ERR_SEATS_TAKEN', 'hold 503 ERR_DB_BUSY', 'confirm 200', 'release 200']
    expect(Object.keys(statuses).filter((k) => !allowed.includes(k))).toEqual([])
    expect(statuses['hold 503 ERR_DB_BUSY']).toBeGreaterThan(0)
    expect(statuses['confirm 200']).toBeGreaterThan(0)
    expect(statuses['release 200']).toBeGreaterThan(0)

    // Every answer was kept: each hold answered 201 is in the table, each purchase has its tickets.
    const [holds] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM holds WHERE id = ANY ($1::uuid[])', [held])
    expect(holds?.n).toBe(held.length)
    const sold = bought.reduce((n, b) => n + b.seats.length, 0)
    const [tickets] = await db.query<{ n: number; seats: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT seat)::int AS seats FROM tickets WHERE event_id = $1',
      [event],
    )
    expect(tickets).toEqual({ n: sold, seats: sold })
    expect(payments.charges).toHaveLength(bought.length)
    expect(await store.invariant(event)).toEqual({ sold, tickets: sold, paid: sold })
    // No seat is left held: each hold was confirmed or released.
    const [left] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM seats WHERE event_id = $1 AND status = 'held'", [event])
    expect(left?.n).toBe(0)

    // And the statements were prepared: the statement connections keep them.
    const [prepared] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements')
    expect(prepared?.n).toBeGreaterThan(0)
  })
})
