// The booking origin contract: holds, confirms, refunds and the proofs under concurrency, run
// against every database the origin supports (a real PostgreSQL server, embedded PGlite).
// Every request carries an admission token verified with the edge's public keys only.
import { createLocalJWKSet } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestPaymentProvider } from '../../src/adapters/payments/test-provider.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { migrate } from '../../src/adapters/postgres/migrate.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../../src/adapters/postgres/seed.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../../src/core/admission-token.js'
import { createOriginApp } from '../../src/origin/app.js'

export function bookingContract(name: string, makeDb: () => Promise<Db>): void {
  describe(`booking origin contract: ${name}`, () => {
    let db: Db
    let tokens: AdmissionTokens
    let seq = 0

    beforeAll(async () => {
      db = await makeDb()
      await migrate(db)
      tokens = new AdmissionTokens({
        keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
        issuer: 'anteroom',
        audience: 'origin',
      })
    })
    afterAll(async () => {
      await db.close()
    })

    async function setup(options: { seatsPerRow?: number; rows?: string[]; maxPerVisitor?: number; holdSeconds?: number } = {}) {
      const event = `ev${Date.now().toString(36)}${seq++}`
      await seedEvent(db, {
        id: event,
        name: 'Test night',
        room: 'sale',
        priceCents: 2500,
        rows: options.rows ?? ['A', 'B', 'C', 'D'],
        seatsPerRow: options.seatsPerRow ?? 10,
        maxPerVisitor: options.maxPerVisitor ?? 4,
        holdSeconds: options.holdSeconds ?? 600,
      })
      const payments = new TestPaymentProvider()
      const store = new PostgresSeatStore(db)
      const app = createOriginApp({
        seats: store,
        payments,
        admission: {
          jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
          issuer: 'anteroom',
          audience: 'origin',
          keys: createLocalJWKSet(tokens.jwks()),
        },
        log: (event, fields) => console.error(event, JSON.stringify(fields)),
      })
      return { event, app, payments, store }
    }

    async function tokenFor(visitor: string, room = 'sale', expSeconds = 600): Promise<string> {
      return tokens.sign(
        { sub: visitor, jti: `s-${visitor}`, room, arr: Date.now(), exp: Math.floor(Date.now() / 1000) + expSeconds },
        Date.now(),
      )
    }

    type App = ReturnType<typeof createOriginApp>
    async function call(
      app: App,
      method: string,
      path: string,
      o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
    ) {
      const headers: Record<string, string> = { ...o.headers }
      if (o.token) headers['anteroom-admission'] = o.token
      if (o.body !== undefined) headers['content-type'] = 'application/json'
      const res = await app.request(path, {
        method,
        headers,
        body: o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body),
      })
      // biome-ignore lint/suspicious/noExplicitAny: test responses are read field by field
      return { status: res.status, body: (await res.json()) as Record<string, any> }
    }

    async function statuses(event: string): Promise<Record<string, string>> {
      const rows = await db.query<{ seat: string; status: string }>('SELECT seat, status FROM seats WHERE event_id = $1', [event])
      return Object.fromEntries(rows.map((r) => [r.seat, r.status]))
    }

    async function expireHold(holdId: string): Promise<void> {
      // Moves the hold's expiry into the past on the database's own clock, instead of sleeping.
      await db.query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1", [holdId])
      await db.query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1", [holdId])
    }

    describe('seats and holds', () => {
      it('shows the seat map, and a hold past its expiry as free without any sweeper', async () => {
        const { app, event } = await setup()
        const token = await tokenFor('v-map')
        const map = await call(app, 'GET', `/events/${event}/seats`, { token })
        expect(map.status).toBe(200)
        expect(map.body.seats).toHaveLength(40)
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['A1'] } })
        expect(held.status).toBe(201)
        const seatA1 = async () =>
          (await call(app, 'GET', `/events/${event}/seats`, { token })).body.seats.find((s: { seat: string }) => s.seat === 'A1').status
        expect(await seatA1()).toBe('held')
        await expireHold(held.body.hold.id)
        expect(await seatA1()).toBe('free')
        expect((await statuses(event)).A1).toBe('held') // still held in the row: derived on read
      })

      it('holds all or nothing, with a 10-minute expiry from the database clock', async () => {
        const { app, event } = await setup()
        const a = await tokenFor('v-a')
        const b = await tokenFor('v-b')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { seats: ['B2', 'B3'] } })
        expect(held.status).toBe(201)
        expect(held.body.hold.seats).toEqual(['B2', 'B3'])
        const [{ now }] = (await db.query<{ now: Date }>('SELECT now()')) as [{ now: Date }]
        const minutes = (new Date(held.body.hold.expiresAt).getTime() - now.getTime()) / 60_000
        expect(minutes).toBeGreaterThan(9.9)
        expect(minutes).toBeLessThanOrEqual(10)
        const clash = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { seats: ['B4', 'B3'] } })
        expect(clash.status).toBe(409)
        expect(clash.body.error).toMatchObject({ code: 'ERR_SEATS_TAKEN', taken: ['B3'] })
        expect(clash.body.error.nearest.length).toBeGreaterThan(0)
        expect(clash.body.error.nearest).not.toContain('B3')
        expect(clash.body.error.nearest[0]).toMatch(/^B/)
        expect((await statuses(event)).B4).toBe('free') // nothing of the failed hold stays
      })

      it('one visitor sending 20 parallel requests cannot exceed the per-visitor limit', async () => {
        const { app, event } = await setup()
        const token = await tokenFor('v-greedy')
        const seats = [
          'A1',
          'A2',
          'A3',
          'A4',
          'A5',
          'A6',
          'A7',
          'A8',
          'A9',
          'A10',
          'B1',
          'B2',
          'B3',
          'B4',
          'B5',
          'B6',
          'B7',
          'B8',
          'B9',
          'B10',
        ]
        const results = await Promise.all(seats.map((s) => call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: [s] } })))
        expect(results.filter((r) => r.status === 201)).toHaveLength(4)
        expect(results.filter((r) => r.status === 409 && r.body.error.code === 'ERR_VISITOR_LIMIT')).toHaveLength(16)
        expect(Object.values(await statuses(event)).filter((s) => s === 'held')).toHaveLength(4)
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token })).body).toEqual({ sold: 0, tickets: 0, paid: 0, ok: true })
      })

      it('bad bodies get a 400 that names the problem', async () => {
        const { app, event } = await setup()
        const token = await tokenFor('v-bad')
        const cases: [unknown, RegExp][] = [
          [{ seats: ['A1', 'Z99'] }, /No such seats: Z99/],
          [{ seats: [] }, /at least one seat/],
          [{ seats: Array.from({ length: 10_000 }, (_, i) => `A${i}`) }, /at most 4 seats in one hold, got 10000/],
          [{ seats: 'A1' }, /seats: must be a list/],
          [{ seats: [1, 2] }, /seats\[0\]: must be a seat name/],
          [{ seats: ['A1', 'A1'] }, /names a seat twice/],
          [{}, /seats: must be a list/],
          ['{"seats": [', /must be JSON/],
          ['null', /seats: must be a list/],
        ]
        for (const [body, message] of cases) {
          const r = await call(app, 'POST', `/events/${event}/holds`, { token, body })
          expect(r.status, JSON.stringify(body).slice(0, 40)).toBe(400)
          expect(r.body.error.message).toMatch(message)
        }
        expect(Object.values(await statuses(event)).every((s) => s === 'free')).toBe(true)
      })

      it('a missing, forged, expired or wrong-room admission gets a 401 and changes nothing', async () => {
        const { app, event } = await setup()
        const good = await tokenFor('v-good')
        const forged = `${good.slice(0, good.lastIndexOf('.') + 1)}${'A'.repeat(86)}`
        const otherKeys = new AdmissionTokens({
          keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
          issuer: 'anteroom',
          audience: 'origin',
        })
        const foreign = await otherKeys.sign(
          { sub: 'v', jti: 'j', room: 'sale', arr: 0, exp: Math.floor(Date.now() / 1000) + 60 },
          Date.now(),
        )
        const expired = await tokens.sign(
          { sub: 'v', jti: 'j', room: 'sale', arr: 0, exp: Math.floor(Date.now() / 1000) - 10 },
          Date.now() - 600_000,
        )
        const wrongRoom = await tokenFor('v-room', 'other-room')
        const cases: [string | undefined, string][] = [
          [undefined, 'ERR_ADMISSION_MISSING'],
          [forged, 'ERR_ADMISSION_SIGNATURE'],
          [foreign, 'ERR_ADMISSION_SIGNATURE'],
          ['not.a.jwt', 'ERR_ADMISSION_INVALID'],
          [expired, 'ERR_ADMISSION_EXPIRED'],
          [wrongRoom, 'ERR_ADMISSION_WRONG_ROOM'],
        ]
        for (const [token, code] of cases) {
          for (const [method, path, body] of [
            ['POST', `/events/${event}/holds`, { seats: ['A1'] }],
            ['GET', `/events/${event}/seats`, undefined],
          ] as const) {
            const r = await call(app, method, path, { token, body })
            expect(r.status, `${code} ${method}`).toBe(401)
            expect(r.body.error.code).toBe(code)
            expect(r.body.error.message.length).toBeGreaterThan(10)
          }
        }
        expect(Object.values(await statuses(event)).every((s) => s === 'free')).toBe(true)
        expect(await db.query('SELECT 1 FROM holds WHERE event_id = $1', [event])).toHaveLength(0)
      })

      it('release gives the seats back; somebody else cannot release your hold', async () => {
        const { app, event } = await setup()
        const a = await tokenFor('v-rel-a')
        const b = await tokenFor('v-rel-b')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { seats: ['C1', 'C2'] } })
        expect((await call(app, 'DELETE', `/holds/${held.body.hold.id}`, { token: b })).status).toBe(404)
        expect((await statuses(event)).C1).toBe('held')
        const released = await call(app, 'DELETE', `/holds/${held.body.hold.id}`, { token: a })
        expect(released).toMatchObject({ status: 200, body: { released: ['C1', 'C2'] } })
        expect((await statuses(event)).C1).toBe('free')
        expect((await call(app, 'DELETE', `/holds/${held.body.hold.id}`, { token: a })).status).toBe(409)
      })

      it('the sweeper frees expired holds, for housekeeping only', async () => {
        const { app, event, store } = await setup()
        const token = await tokenFor('v-sweep')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['D1'] } })
        await expireHold(held.body.hold.id)
        expect(await store.sweep()).toBeGreaterThanOrEqual(1)
        expect((await statuses(event)).D1).toBe('free')
      })
    })

    describe('confirm', () => {
      it('a double-tap of five confirms is charged once and booked once', async () => {
        const { app, event, payments } = await setup()
        const token = await tokenFor('v-tap')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['A5', 'A6'] } })
        payments.delayMs = 100
        const headers = { 'idempotency-key': 'tap-0001-abcdef' }
        const results = await Promise.all(
          Array.from({ length: 5 }, () => call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, { token, headers })),
        )
        for (const r of results) expect(r).toEqual(results[0])
        expect(results[0]).toMatchObject({ status: 200, body: { booked: true, amountCents: 5000 } })
        expect(payments.charges).toHaveLength(1)
        expect(await db.query('SELECT seat FROM tickets WHERE event_id = $1 ORDER BY seat', [event])).toEqual([
          { seat: 'A5' },
          { seat: 'A6' },
        ])
        // A later repeat of the key replays the answer; a different key cannot book the seats again.
        expect(await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, { token, headers })).toEqual(results[0])
        const again = await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token,
          headers: { 'idempotency-key': 'tap-0002-abcdef' },
        })
        expect(again.status).toBe(409)
        expect(payments.charges).toHaveLength(1)
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token })).body).toMatchObject({
          sold: 2,
          tickets: 2,
          paid: 2,
          ok: true,
        })
      })

      it('a hold that expires mid-payment while another visitor takes the seat ends in a refund', async () => {
        const { app, event, payments } = await setup()
        const a = await tokenFor('v-slow')
        const b = await tokenFor('v-fast')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { seats: ['B7'] } })
        const gate = payments.pause()
        const confirming = call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token: a,
          headers: { 'idempotency-key': 'slow-0001-abcdef' },
        })
        await gate.reached
        await expireHold(held.body.hold.id)
        const taken = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { seats: ['B7'] } })
        expect(taken.status).toBe(201)
        gate.release()
        const result = await confirming
        expect(result).toMatchObject({ status: 409, body: { refunded: true, error: { code: 'ERR_HOLD_LOST' } } })
        expect(payments.charges).toHaveLength(1)
        expect(payments.refunds).toEqual([payments.charges[0]?.chargeId])
        expect((await statuses(event)).B7).toBe('held')
        expect(await db.query('SELECT 1 FROM tickets WHERE event_id = $1', [event])).toHaveLength(0)
        const payment = await db.query<{ status: string }>('SELECT status FROM payments WHERE idempotency_key = $1', ['slow-0001-abcdef'])
        expect(payment).toEqual([{ status: 'refunded' }])
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token: a })).body).toMatchObject({
          sold: 0,
          tickets: 0,
          paid: 0,
          ok: true,
        })
      })

      it('a declined card books nothing and keeps the hold; a missing key is a 400; other visitors see 404', async () => {
        const { app, event, payments } = await setup()
        const token = await tokenFor('v-decline')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['C5'] } })
        payments.declineNext = 1
        const declined = await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token,
          headers: { 'idempotency-key': 'decl-0001-abcdef' },
        })
        expect(declined).toMatchObject({ status: 402, body: { error: { code: 'ERR_PAYMENT_DECLINED' } } })
        expect((await statuses(event)).C5).toBe('held')
        expect((await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, { token })).status).toBe(400)
        const other = await tokenFor('v-other')
        expect(
          (
            await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
              token: other,
              headers: { 'idempotency-key': 'decl-0002-abcdef' },
            })
          ).status,
        ).toBe(404)
        const paid = await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token,
          headers: { 'idempotency-key': 'decl-0003-abcdef' },
        })
        expect(paid.status).toBe(200)
      })
    })

    describe('under contention', () => {
      it('2,000 visitors, 2,000 concurrent hold attempts, 40 seats: exactly 40 held, no deadlock surfaced, invariant intact', async () => {
        const { app, event, payments } = await setup({ rows: ['A', 'B', 'C', 'D'], seatsPerRow: 10 })
        const all = ['A', 'B', 'C', 'D'].flatMap((r) => Array.from({ length: 10 }, (_, i) => `${r}${i + 1}`))
        const attempts = await Promise.all(
          Array.from({ length: 2000 }, async (_, i) => {
            // Half ask for one seat; the rest for two or three seats, listed in random order.
            const n = i % 2 === 0 ? 1 : 2 + (i % 3 === 0 ? 1 : 0)
            const picked = new Set<string>()
            while (picked.size < n) picked.add(all[Math.floor(Math.random() * all.length)] as string)
            return { visitor: `crowd-${i}`, seats: [...picked], token: await tokenFor(`crowd-${i}`) }
          }),
        )
        const results = await Promise.all(
          attempts.map((a) => call(app, 'POST', `/events/${event}/holds`, { token: a.token, body: { seats: a.seats } })),
        )
        const codes = results.map((r) => r.status)
        expect(codes.filter((s) => s >= 500)).toEqual([])
        expect(codes.every((s) => s === 201 || s === 409)).toBe(true)
        const won = results.filter((r) => r.status === 201)
        const heldSeats = won.flatMap((r) => r.body.hold.seats as string[])
        expect(new Set(heldSeats).size).toBe(heldSeats.length)
        expect(heldSeats.length).toBe(40)
        expect(Object.values(await statuses(event)).filter((s) => s === 'held')).toHaveLength(40)
        // Everybody who won pays; the invariant holds with 40 seats sold.
        const winners = results.map((r, i) => ({ r, a: attempts[i]! })).filter(({ r }) => r.status === 201)
        await Promise.all(
          winners.map(({ r, a }) =>
            call(app, 'POST', `/holds/${r.body.hold.id}/confirm`, { token: a.token, headers: { 'idempotency-key': `pay-${a.visitor}-x` } }),
          ),
        )
        expect(payments.charges).toHaveLength(winners.length)
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token: attempts[0]!.token })).body).toEqual({
          sold: 40,
          tickets: 40,
          paid: 40,
          ok: true,
        })
      })
    })
  })
}
