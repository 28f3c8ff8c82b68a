// A checkout cut off by the database (ERR_DB_UNAVAILABLE) is finished by a repeat of its
// Idempotency-Key, on both databases the origin supports. The database is real; the failures are
// injected at the Db boundary, where a lost connection surfaces (test/postgres-restart.test.ts does
// the same with a real restart of the server).
import { createLocalJWKSet } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import type { Db } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { pgliteDb } from '../src/adapters/postgres/pglite.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { unavailable } from '../src/adapters/postgres/unavailable.js'
import { createBookingApp } from '../src/booking/app.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import type { PaymentProvider } from '../src/ports/payments.js'

/** What the database does wrong next: refuse a transaction, or run it (or a statement) and lose the answer. */
type Fault = { kind: 'refuse-transaction' } | { kind: 'lose-answer'; of: 'transaction' | string }

const lost = () => unavailable(Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' }))

/** db, with faults injected once each, in order. */
function faulty(db: Db) {
  const faults: Fault[] = []
  const wrapped: Db = {
    async query<T>(text: string, params?: unknown[]) {
      const f = faults[0]
      if (f?.kind === 'lose-answer' && f.of !== 'transaction' && text.startsWith(`-- ${f.of}.sql`)) {
        faults.shift()
        await db.query<T>(text, params)
        throw lost()
      }
      return db.query<T>(text, params)
    },
    async transaction(fn) {
      const f = faults[0]
      if (f?.kind === 'refuse-transaction') {
        faults.shift()
        throw lost()
      }
      if (f?.kind === 'lose-answer' && f.of === 'transaction') {
        faults.shift()
        await db.transaction(fn)
        throw lost()
      }
      return db.transaction(fn)
    },
    close: () => db.close(),
  }
  return { db: wrapped, next: (f: Fault) => faults.push(f), pending: () => faults.length }
}

for (const [name, makeDb] of [
  ['PostgreSQL server', async () => postgresDb(inject('postgresUrl'), { max: 6 })],
  ['embedded PGlite', () => pgliteDb()],
] as const) {
  describe(`a checkout cut off by the database is finished by its repeat: ${name}`, () => {
    let real: Db
    let tokens: AdmissionTokens
    let seq = 0

    beforeAll(async () => {
      real = await makeDb()
      await migrate(real)
      tokens = new AdmissionTokens({
        keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
        issuer: 'anteroom',
        audience: 'origin',
      })
    })
    afterAll(async () => {
      await real?.close()
    })

    async function setup(options: { repeatWaitMs?: number } = {}) {
      const event = `resume${Date.now().toString(36)}${seq++}`
      await seedEvent(real, { id: event, name: 'Resume night', room: 'sale', priceCents: 2500, rows: ['A'], seatsPerRow: 10 })
      const f = faulty(real)
      const payments = new TestPaymentProvider()
      // Counts the charges asked for, so that a test can wait until n requests have reached the provider.
      let charging = 0
      const waiting: { n: number; resolve: () => void }[] = []
      const provider: PaymentProvider = {
        charge(input) {
          charging++
          for (const w of waiting.splice(0)) {
            if (charging >= w.n) w.resolve()
            else waiting.push(w)
          }
          return payments.charge(input)
        },
        refund: (id) => payments.refund(id),
      }
      const reached = (n: number) => (charging >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ n, resolve })))
      const store = new PostgresSeatStore(f.db)
      const errors: unknown[] = []
      const app = (repeatWaitMs = options.repeatWaitMs) =>
        createBookingApp({
          seats: store,
          payments: provider,
          repeatWaitMs,
          admission: { jwksUrl: 'http://127.0.0.1:1/jwks', issuer: 'anteroom', audience: 'origin', keys: createLocalJWKSet(tokens.jwks()) },
          log: (e, fields) => {
            if (e === 'origin_error') errors.push(fields)
          },
        })
      const token = await tokens.sign(
        { sub: `v-${event}`, jti: `s-${event}`, room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 },
        Date.now(),
      )
      return { event, f, payments, reached, store, app, token, errors }
    }

    type App = ReturnType<typeof createBookingApp>
    async function call(app: App, method: string, path: string, token: string, headers: Record<string, string> = {}, body?: unknown) {
      const res = await app.request(path, {
        method,
        headers: { 'anteroom-admission': token, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      // biome-ignore lint/suspicious/noExplicitAny: test responses are read field by field
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, any> }
    }

    async function paymentStatus(key: string): Promise<string | undefined> {
      return (await real.query<{ status: string }>('SELECT status FROM payments WHERE idempotency_key = $1', [key]))[0]?.status
    }

    it('charged, then book() had no database: a 503, and the repeat books it with the one charge', async () => {
      const { event, f, payments, store, app, token, errors } = await setup()
      const origin = app()
      const held = await call(origin, 'POST', `/events/${event}/holds`, token, {}, { seats: ['A1', 'A2'] })
      expect(held.status).toBe(201)
      const headers = { 'idempotency-key': 'resume-0001-abcd' }
      f.next({ kind: 'refuse-transaction' })
      const cut = await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)
      expect(cut).toMatchObject({ status: 503, retryAfter: '1', body: { error: { code: 'ERR_DB_UNAVAILABLE' } } })
      expect(payments.charges).toHaveLength(1)
      expect(await paymentStatus('resume-0001-abcd')).toBe('pending')
      // The repeat does not wait for a first request that failed here: it finishes it at once.
      const done = await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)
      expect(done).toMatchObject({ status: 200, body: { booked: true, amountCents: 5000, chargeId: payments.charges[0]?.chargeId } })
      expect(payments.charges).toHaveLength(1)
      expect(await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)).toEqual(done)
      expect(await store.invariant(event)).toEqual({ sold: 2, tickets: 2, paid: 2 })
      expect(errors).toEqual([])
    })

    it('booked, but the answer was lost: the repeat replays it', async () => {
      const { event, f, payments, store, app, token } = await setup()
      const origin = app()
      const held = await call(origin, 'POST', `/events/${event}/holds`, token, {}, { seats: ['A3'] })
      const headers = { 'idempotency-key': 'resume-0002-abcd' }
      f.next({ kind: 'lose-answer', of: 'transaction' })
      expect((await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)).status).toBe(503)
      expect(await paymentStatus('resume-0002-abcd')).toBe('confirmed')
      const again = await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)
      expect(again).toMatchObject({ status: 200, body: { booked: true, tickets: [{ seat: 'A3' }] } })
      expect(payments.charges).toHaveLength(1)
      expect(await store.invariant(event)).toEqual({ sold: 1, tickets: 1, paid: 1 })
    })

    it('the payment row was written but its answer lost: the repeat charges once and books', async () => {
      const { event, f, payments, store, app, token } = await setup()
      const origin = app()
      const held = await call(origin, 'POST', `/events/${event}/holds`, token, {}, { seats: ['A4'] })
      const headers = { 'idempotency-key': 'resume-0003-abcd' }
      f.next({ kind: 'lose-answer', of: 'payment-begin' })
      expect((await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)).status).toBe(503)
      expect(payments.charges).toHaveLength(0)
      expect(await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)).toMatchObject({
        status: 200,
        body: { booked: true },
      })
      expect(payments.charges).toHaveLength(1)
      expect(await store.invariant(event)).toEqual({ sold: 1, tickets: 1, paid: 1 })
    })

    it('cut off, and the hold expired before the repeat: the repeat refunds the charge and says so', async () => {
      const { event, f, payments, store, app, token } = await setup()
      const origin = app()
      const held = await call(origin, 'POST', `/events/${event}/holds`, token, {}, { seats: ['A5'] })
      const headers = { 'idempotency-key': 'resume-0004-abcd' }
      f.next({ kind: 'refuse-transaction' })
      expect((await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)).status).toBe(503)
      // The hold expires on the database's clock.
      await real.query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1", [held.body.hold.id])
      await real.query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1", [held.body.hold.id])
      const refunded = await call(origin, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)
      expect(refunded).toMatchObject({ status: 409, body: { refunded: true, error: { code: 'ERR_HOLD_LOST' } } })
      expect(payments.charges).toHaveLength(1)
      expect(payments.refunds).toEqual([payments.charges[0]?.chargeId])
      expect(await paymentStatus('resume-0004-abcd')).toBe('refunded')
      expect(await store.invariant(event)).toEqual({ sold: 0, tickets: 0, paid: 0 })
    })

    it('a repeat in another process while the first request is still running: one charge, one booking, the same answer', async () => {
      const { event, payments, reached, store, app, token, errors } = await setup()
      // Two origins on one database and one provider, as two processes behind a load balancer; the
      // second waits 100 ms for the first request, then takes it as stopped and resumes it.
      const first = app()
      const second = app(100)
      const held = await call(first, 'POST', `/events/${event}/holds`, token, {}, { seats: ['A6'] })
      const headers = { 'idempotency-key': 'resume-0005-abcd' }
      const gate = payments.pause()
      const a = call(first, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)
      await reached(1)
      const b = call(second, 'POST', `/holds/${held.body.hold.id}/confirm`, token, headers)
      // Both requests wait at the provider with the same key; then both go on.
      await reached(2)
      gate.release()
      const [ra, rb] = await Promise.all([a, b])
      expect(ra).toMatchObject({ status: 200, body: { booked: true } })
      expect(rb).toEqual(ra)
      expect(payments.charges).toHaveLength(1)
      expect(payments.refunds).toEqual([])
      expect(await store.invariant(event)).toEqual({ sold: 1, tickets: 1, paid: 1 })
      expect(errors).toEqual([])
    })
  })
}
