// The booking origin contract: holds, confirms, refunds and the proofs under concurrency, run
// against every database the origin supports (a real PostgreSQL server, embedded PGlite).
// Every request carries an admission token verified with the edge's public keys only.
import { connect } from 'node:net'
import { serve } from '@hono/node-server'
import { createLocalJWKSet, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestPaymentProvider } from '../../src/adapters/payments/test-provider.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { migrate } from '../../src/adapters/postgres/migrate.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { type ItemSeed, seedEvent } from '../../src/adapters/postgres/seed.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys, type SigningKey } from '../../src/core/admission-token.js'
import { createOriginApp } from '../../src/origin/app.js'
import { MAX_BODY_BYTES } from '../../src/origin/body.js'
import { admissionVerifier } from '../../src/origin/verify.js'
import type { ItemClaim } from '../../src/ports/seat-store.js'

export function bookingContract(name: string, makeDb: () => Promise<Db>): void {
  describe(`booking origin contract: ${name}`, () => {
    let db: Db
    let tokens: AdmissionTokens
    let signingKey: SigningKey
    let seq = 0

    beforeAll(async () => {
      db = await makeDb()
      await migrate(db)
      const keys = await importSigningKeys([await generateSigningJwk('edge-1')])
      signingKey = keys[0] as SigningKey
      tokens = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
    })
    afterAll(async () => {
      await db.close()
    })

    async function setup(
      options: {
        seatsPerRow?: number
        rows?: string[]
        maxPerVisitor?: number
        holdSeconds?: number
        openAdmissions?: 'accept' | 'refuse'
        endSessionOnPurchase?: boolean
        items?: ItemSeed[]
      } = {},
    ) {
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
        items: options.items,
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
          ...(options.openAdmissions ? { openAdmissions: options.openAdmissions } : {}),
        },
        endSessionOnPurchase: options.endSessionOnPurchase,
        log: (event, fields) => {
          logs.push({ ...fields, log: event })
          if (event === 'origin_error') console.error(event, JSON.stringify(fields))
        },
      })
      const logs: Record<string, unknown>[] = []
      return { event, app, payments, store, logs }
    }

    async function tokenFor(visitor: string, room = 'sale', expSeconds = 600): Promise<string> {
      return tokens.sign(
        { sub: visitor, jti: `s-${visitor}`, room, arr: Date.now(), exp: Math.floor(Date.now() / 1000) + expSeconds },
        Date.now(),
      )
    }

    /** An open admission as the edge issues it without its store: the visitor's own sub, "open": true, 60 s. */
    async function openTokenFor(visitor: string, room = 'sale'): Promise<string> {
      const now = Math.floor(Date.now() / 1000)
      return new SignJWT({ room, arr: Date.now(), open: true })
        .setProtectedHeader({ alg: 'ES256', kid: signingKey.kid, typ: 'JWT' })
        .setIssuer('anteroom')
        .setAudience('origin')
        .setSubject(visitor)
        .setJti(`s-${visitor}`)
        .setIssuedAt(now)
        .setExpirationTime(now + 60)
        .sign(signingKey.privateKey)
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
      // JSON bodies only; a POST says so even without a body, as every client of the origin does.
      if (o.body !== undefined || method === 'POST') headers['content-type'] = 'application/json'
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
      await db.query("UPDATE hold_items SET expires_at = now() - interval '1 second' WHERE hold_id = $1", [holdId])
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
          [{ seats: Array.from({ length: 50 }, (_, i) => `A${i}`) }, /at most 4 seats in one hold, got 50/],
          [{ seats: 'A1' }, /seats: must be a list/],
          [{ seats: [1, 2] }, /seats\[0\]: must be a seat name/],
          [{ seats: ['A1', 'A1'] }, /names a seat twice/],
          [{}, /seats: must be a list/],
          [{ seats: ['A1'], extra: true }, /extra: not a field of a hold/],
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

    describe('counted items', () => {
      const NIGHTS: ItemSeed[] = [
        { id: 'night-12', name: 'Double room, night of 12 June', quantity: 3 },
        { id: 'night-13', name: 'Double room, night of 13 June', quantity: 2 },
      ]
      const one = (...names: string[]) => names.map((item) => ({ item, quantity: 1 }))

      /** GET /events/:event/items, by item key. */
      async function itemsOf(app: App, event: string, token: string): Promise<Record<string, Record<string, unknown>>> {
        const r = await call(app, 'GET', `/events/${event}/items`, { token })
        expect(r.status).toBe(200)
        return Object.fromEntries((r.body.items as { item: string }[]).map((i) => [i.item, i]))
      }

      /** The bucket rows of an event's item: the counters the claims change. */
      async function buckets(event: string, item: string) {
        return db.query<{ bucket: number; capacity: number; held: number; sold: number }>(
          'SELECT bucket, capacity, held, sold FROM item_buckets WHERE event_id = $1 AND item = $2 ORDER BY bucket',
          [event, item],
        )
      }

      it('lists each item with its total, free, held and sold; a package holds all or nothing, in either order', async () => {
        const { app, event } = await setup({ items: NIGHTS })
        const a = await tokenFor('v-it-a')
        const b = await tokenFor('v-it-b')
        const c = await tokenFor('v-it-c')
        const d = await tokenFor('v-it-d')
        const listed = await call(app, 'GET', `/events/${event}/items`, { token: a })
        expect(listed.body).toEqual({
          event: { id: event, name: 'Test night', priceCents: 2500 },
          items: [
            { item: 'night-12', name: 'Double room, night of 12 June', total: 3, free: 3, held: 0, sold: 0 },
            { item: 'night-13', name: 'Double room, night of 13 June', total: 2, free: 2, held: 0, sold: 0 },
          ],
        })
        const held = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { items: [{ item: 'night-13', quantity: 2 }] } })
        expect(held.status).toBe(201)
        expect(held.body.hold).toMatchObject({ seats: [], items: [{ item: 'night-13', quantity: 2 }] })
        for (const order of [one('night-12', 'night-13'), one('night-13', 'night-12')]) {
          const clash = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { items: order } })
          expect(clash.status).toBe(409)
          expect(clash.body.error).toMatchObject({
            code: 'ERR_ITEMS_SHORT',
            field: 'items',
            short: [{ item: 'night-13', wanted: 1, left: 0 }],
          })
          expect(clash.body.error.message).toMatch(/night-13 \(1 wanted, 0 left\)/)
        }
        // Nothing of the failed packages stays held.
        expect(await itemsOf(app, event, a)).toMatchObject({ 'night-12': { free: 3, held: 0 }, 'night-13': { free: 0, held: 2 } })
        expect((await buckets(event, 'night-12'))[0]).toMatchObject({ held: 0, sold: 0 })
        expect(await db.query('SELECT 1 FROM hold_items WHERE event_id = $1 AND holder = $2', [event, 'v-it-b'])).toHaveLength(0)
        expect((await call(app, 'POST', `/events/${event}/holds`, { token: c, body: { items: one('night-12') } })).status).toBe(201)
        // Every item short is named, with what it has left.
        const both = await call(app, 'POST', `/events/${event}/holds`, {
          token: d,
          body: {
            items: [
              { item: 'night-13', quantity: 1 },
              { item: 'night-12', quantity: 3 },
            ],
          },
        })
        expect(both.status).toBe(409)
        expect(both.body.error.short).toEqual([
          { item: 'night-12', wanted: 3, left: 2 },
          { item: 'night-13', wanted: 1, left: 0 },
        ])
        expect(await itemsOf(app, event, a)).toMatchObject({ 'night-12': { free: 2, held: 1 }, 'night-13': { free: 0, held: 2 } })
      })

      it('one hold carries seats and items together, all or nothing, and is paid and ticketed per unit', async () => {
        const { app, event, payments } = await setup({ items: NIGHTS })
        const a = await tokenFor('v-mix-a')
        const b = await tokenFor('v-mix-b')
        expect(
          (await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { seats: ['A1'], items: one('night-13') } })).status,
        ).toBe(201)
        const taken = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { seats: ['A1', 'A2'], items: one('night-12') } })
        expect(taken.body.error).toMatchObject({ code: 'ERR_SEATS_TAKEN', taken: ['A1'] })
        const short = await call(app, 'POST', `/events/${event}/holds`, {
          token: b,
          body: { seats: ['A2'], items: [{ item: 'night-13', quantity: 2 }] },
        })
        expect(short.body.error).toMatchObject({ code: 'ERR_ITEMS_SHORT', short: [{ item: 'night-13', wanted: 2, left: 1 }] })
        expect(await statuses(event)).toMatchObject({ A1: 'held', A2: 'free' })
        expect(await itemsOf(app, event, b)).toMatchObject({ 'night-12': { free: 3 }, 'night-13': { free: 1 } })
        const held = await call(app, 'POST', `/events/${event}/holds`, {
          token: b,
          body: {
            seats: ['A2'],
            items: [
              { item: 'night-13', quantity: 1 },
              { item: 'night-12', quantity: 2 },
            ],
          },
        })
        expect(held.status).toBe(201)
        expect(held.body.hold).toMatchObject({
          seats: ['A2'],
          items: [
            { item: 'night-12', quantity: 2 },
            { item: 'night-13', quantity: 1 },
          ],
        })
        const paid = await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token: b,
          headers: { 'idempotency-key': 'mix-0001-abcdef' },
        })
        expect(paid).toMatchObject({ status: 200, body: { booked: true, amountCents: 4 * 2500 } })
        const tickets = (paid.body.tickets as Record<string, unknown>[]).map(({ id: _id, ...t }) => t)
        expect(tickets).toEqual([
          { seat: 'A2' },
          { item: 'night-12', serial: 1 },
          { item: 'night-12', serial: 2 },
          { item: 'night-13', serial: 1 },
        ])
        expect(payments.charges).toEqual([expect.objectContaining({ amountCents: 10_000 })])
        expect(await itemsOf(app, event, b)).toMatchObject({
          'night-12': { free: 1, held: 0, sold: 2 },
          'night-13': { free: 0, held: 1, sold: 1 },
        })
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token: b })).body).toEqual({
          sold: 4,
          tickets: 4,
          paid: 4,
          ok: true,
        })
      })

      it('an item hold past its expiry counts as free without any sweeper, and the next claim takes its units back', async () => {
        const { app, event, store } = await setup({ items: NIGHTS })
        const a = await tokenFor('v-exp-a')
        const b = await tokenFor('v-exp-b')
        const c = await tokenFor('v-exp-c')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { items: one('night-12', 'night-13') } })
        await expireHold(held.body.hold.id)
        expect(await itemsOf(app, event, a)).toMatchObject({ 'night-12': { free: 3, held: 0 }, 'night-13': { free: 2, held: 0 } })
        // Derived on read: the counters still count the expired units.
        expect((await buckets(event, 'night-13'))[0]).toMatchObject({ held: 1 })
        const next = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { items: [{ item: 'night-13', quantity: 2 }] } })
        expect(next.status).toBe(201)
        expect((await buckets(event, 'night-13'))[0]).toMatchObject({ held: 2, sold: 0 })
        const rows = await db.query<{ item: string; status: string }>(
          'SELECT item, status FROM hold_items WHERE hold_id = $1 ORDER BY item',
          [held.body.hold.id],
        )
        expect(rows).toEqual([
          { item: 'night-12', status: 'held' },
          { item: 'night-13', status: 'expired' },
        ])
        // The lost hold cannot be paid for; the sweeper takes back the rest, for housekeeping only.
        const late = await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token: a,
          headers: { 'idempotency-key': 'exp-0001-abcdef' },
        })
        expect(late).toMatchObject({ status: 409, body: { refunded: false, error: { code: 'ERR_HOLD_LOST' } } })
        expect(await store.sweep()).toBeGreaterThanOrEqual(1)
        expect((await buckets(event, 'night-12'))[0]).toMatchObject({ held: 0 })
        expect((await call(app, 'POST', `/events/${event}/holds`, { token: c, body: { items: one('night-12') } })).status).toBe(201)
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token: a })).body).toEqual({
          sold: 0,
          tickets: 0,
          paid: 0,
          ok: true,
        })
      })

      it('release gives the items back; somebody else cannot release your hold', async () => {
        const { app, event } = await setup({ items: NIGHTS })
        const a = await tokenFor('v-irel-a')
        const b = await tokenFor('v-irel-b')
        const held = await call(app, 'POST', `/events/${event}/holds`, {
          token: a,
          body: { seats: ['C1'], items: one('night-13', 'night-12') },
        })
        expect((await call(app, 'DELETE', `/holds/${held.body.hold.id}`, { token: b })).status).toBe(404)
        expect(await itemsOf(app, event, a)).toMatchObject({ 'night-12': { held: 1 }, 'night-13': { held: 1 } })
        const released = await call(app, 'DELETE', `/holds/${held.body.hold.id}`, { token: a })
        expect(released).toEqual({ status: 200, body: { released: ['C1'], items: one('night-12', 'night-13') } })
        expect(await itemsOf(app, event, a)).toMatchObject({ 'night-12': { free: 3, held: 0 }, 'night-13': { free: 2, held: 0 } })
        expect((await buckets(event, 'night-13'))[0]).toMatchObject({ held: 0 })
        expect((await call(app, 'DELETE', `/holds/${held.body.hold.id}`, { token: a })).status).toBe(409)
        expect(
          (await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { items: [{ item: 'night-13', quantity: 2 }] } })).status,
        ).toBe(201)
      })

      it('a double-tap of confirms on a package is charged once and booked once', async () => {
        const { app, event, payments } = await setup({ items: NIGHTS })
        const token = await tokenFor('v-itap')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { items: one('night-13', 'night-12') } })
        payments.delayMs = 50
        const headers = { 'idempotency-key': 'itap-0001-abcdef' }
        const results = await Promise.all(
          Array.from({ length: 4 }, () => call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, { token, headers })),
        )
        for (const r of results) expect(r).toEqual(results[0])
        expect(results[0]).toMatchObject({ status: 200, body: { booked: true, amountCents: 5000 } })
        expect(payments.charges).toHaveLength(1)
        expect(await db.query('SELECT item, serial FROM tickets WHERE event_id = $1 ORDER BY item', [event])).toEqual([
          { item: 'night-12', serial: 1 },
          { item: 'night-13', serial: 1 },
        ])
        const again = await call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token,
          headers: { 'idempotency-key': 'itap-0002-abcdef' },
        })
        expect(again.status).toBe(409)
        expect(payments.charges).toHaveLength(1)
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token })).body).toEqual({ sold: 2, tickets: 2, paid: 2, ok: true })
      })

      it('a package hold that expires mid-payment while another visitor takes its room ends in a refund', async () => {
        const { app, event, payments } = await setup({ items: NIGHTS })
        const a = await tokenFor('v-islow')
        const b = await tokenFor('v-ifast')
        const held = await call(app, 'POST', `/events/${event}/holds`, {
          token: a,
          body: { items: [{ item: 'night-13', quantity: 2 }, ...one('night-12')] },
        })
        const gate = payments.pause()
        const confirming = call(app, 'POST', `/holds/${held.body.hold.id}/confirm`, {
          token: a,
          headers: { 'idempotency-key': 'islow-0001-abcdef' },
        })
        await gate.reached
        await expireHold(held.body.hold.id)
        expect((await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { items: one('night-13') } })).status).toBe(201)
        gate.release()
        expect(await confirming).toMatchObject({ status: 409, body: { refunded: true, error: { code: 'ERR_HOLD_LOST' } } })
        expect(payments.refunds).toEqual([payments.charges[0]?.chargeId])
        expect(payments.charges[0]?.amountCents).toBe(3 * 2500)
        // Nothing of the lost package was sold, not even night 12, whose unit nobody took.
        expect(await db.query('SELECT 1 FROM tickets WHERE event_id = $1', [event])).toHaveLength(0)
        expect(await itemsOf(app, event, a)).toMatchObject({
          'night-12': { sold: 0, held: 0, free: 3 },
          'night-13': { sold: 0, held: 1, free: 1 },
        })
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token: a })).body).toEqual({
          sold: 0,
          tickets: 0,
          paid: 0,
          ok: true,
        })
      })

      it('each seat and each unit counts toward the per-visitor limit, also under 12 parallel claims', async () => {
        const { app, event } = await setup({ items: [{ id: 'ga', quantity: 100, buckets: 4 }, ...NIGHTS] })
        const token = await tokenFor('v-ilimit')
        expect(
          (await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['A1'], items: [{ item: 'ga', quantity: 2 }] } }))
            .status,
        ).toBe(201)
        const over = await call(app, 'POST', `/events/${event}/holds`, { token, body: { items: one('night-12', 'night-13') } })
        expect(over).toMatchObject({ status: 409, body: { error: { code: 'ERR_VISITOR_LIMIT', limit: 4, current: 3 } } })
        const greedy = await tokenFor('v-ilimit-2')
        const bodies = Array.from({ length: 12 }, (_, i) =>
          i % 3 === 0
            ? { seats: [`B${i + 1}`] }
            : i % 3 === 1
              ? { items: one('ga') }
              : { items: one(i % 2 === 0 ? 'night-12' : 'night-13') },
        )
        const results = await Promise.all(bodies.map((body) => call(app, 'POST', `/events/${event}/holds`, { token: greedy, body })))
        expect(results.filter((r) => r.status === 201)).toHaveLength(4)
        expect(results.filter((r) => r.status === 409 && r.body.error.code === 'ERR_VISITOR_LIMIT')).toHaveLength(8)
        const [units] = await db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM seats WHERE event_id = $1 AND holder = $2)::int
                + (SELECT coalesce(sum(quantity), 0) FROM hold_items WHERE event_id = $1 AND holder = $2 AND status = 'held')::int AS n`,
          [event, 'v-ilimit-2'],
        )
        expect(units?.n).toBe(4)
        // One hold may not ask for more than the limit at all.
        const big = await call(app, 'POST', `/events/${event}/holds`, {
          token: await tokenFor('v-ilimit-3'),
          body: { seats: ['D1', 'D2'], items: [{ item: 'ga', quantity: 3 }] },
        })
        expect(big).toMatchObject({ status: 400, body: { error: { code: 'ERR_BODY', field: 'items' } } })
        expect(big.body.error.message).toMatch(/at most 4 in one hold, seats and item units together, got 5/)
      })

      it('bad item bodies get a 400 that names the field; unknown items a 400 of their own', async () => {
        const { app, event } = await setup({ items: NIGHTS })
        const token = await tokenFor('v-ibad')
        const cases: [unknown, string, RegExp][] = [
          [{ items: 'night-12' }, 'items', /items: must be a list/],
          [{ items: [] }, 'items', /items: must name at least one item/],
          [{ items: ['night-12'] }, 'items[0]', /items\[0\]: must be an object/],
          [{ items: [{ item: 'night-12' }] }, 'items[0].quantity', /items\[0\]\.quantity: must be a whole number from 1 to 4/],
          [{ items: [{ item: 'night-12', quantity: 0 }] }, 'items[0].quantity', /must be a whole number/],
          [{ items: [{ item: 'night-12', quantity: -1 }] }, 'items[0].quantity', /must be a whole number/],
          [{ items: [{ item: 'night-12', quantity: 1.5 }] }, 'items[0].quantity', /must be a whole number/],
          [{ items: [{ item: 'night-12', quantity: '1' }] }, 'items[0].quantity', /must be a whole number/],
          [{ items: [{ item: 'night-12', quantity: 5 }] }, 'items[0].quantity', /from 1 to 4/],
          [{ items: [...one('night-12'), { item: 'night 13', quantity: 1 }] }, 'items[1].item', /items\[1\]\.item: must be an item key/],
          [{ items: [{ item: 'night-12', quantity: 1, price: 0 }] }, 'items[0].price', /items\[0\]\.price: not a field/],
          [{ items: one('night-12', 'night-13', 'night-12') }, 'items', /items: names night-12 twice/],
          [
            { items: Array.from({ length: 21 }, (_, i) => ({ item: `x${i}`, quantity: 1 })) },
            'items',
            /at most 20 items in one hold, got 21/,
          ],
          [{ items: one('night-12'), seat: ['A1'] }, 'seat', /seat: not a field of a hold/],
          [{ seats: [], items: [] }, 'items', /items: must name at least one item/],
          [{ seats: 'A1', items: one('night-12') }, 'seats', /seats: must be a list/],
          [
            {
              items: [
                { item: 'night-12', quantity: 3 },
                { item: 'night-13', quantity: 2 },
              ],
            },
            'items',
            /at most 4 in one hold/,
          ],
          [
            {
              items: [
                { item: 'night-12', quantity: 1 },
                { item: 'suite-12', quantity: 1 },
                { item: 'bar', quantity: 1 },
              ],
            },
            'items',
            /No such items: bar, suite-12/,
          ],
        ]
        for (const [body, field, message] of cases) {
          const r = await call(app, 'POST', `/events/${event}/holds`, { token, body })
          expect(r.status, JSON.stringify(body).slice(0, 60)).toBe(400)
          expect(r.body.error.message, JSON.stringify(body).slice(0, 60)).toMatch(message)
          expect(r.body.error.field, JSON.stringify(body).slice(0, 60)).toBe(field)
        }
        const unknown = await call(app, 'POST', `/events/${event}/holds`, { token, body: { items: one('suite-12') } })
        expect(unknown.body.error).toMatchObject({ code: 'ERR_UNKNOWN_ITEMS', unknown: ['suite-12'] })
        // An empty list beside a good one is fine.
        expect((await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: [], items: one('night-12') } })).status).toBe(201)
        expect((await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['A1'], items: [] } })).status).toBe(201)
        expect(await db.query('SELECT 1 FROM hold_items WHERE event_id = $1', [event])).toHaveLength(1)
      })

      it('a bucketed item spreads claims over its buckets, splits a quantity no bucket has, and never oversells', async () => {
        const { app, event, store } = await setup({ items: [{ id: 'ga', name: 'General admission', quantity: 10, buckets: 4 }] })
        expect(await buckets(event, 'ga')).toEqual([
          { bucket: 0, capacity: 3, held: 0, sold: 0 },
          { bucket: 1, capacity: 3, held: 0, sold: 0 },
          { bucket: 2, capacity: 2, held: 0, sold: 0 },
          { bucket: 3, capacity: 2, held: 0, sold: 0 },
        ])
        const token = await tokenFor('v-ga-4')
        // No bucket has 4: the claim takes them from two.
        const four = await call(app, 'POST', `/events/${event}/holds`, { token, body: { items: [{ item: 'ga', quantity: 4 }] } })
        expect(four.body.hold.items).toEqual([{ item: 'ga', quantity: 4 }])
        const parts = await db.query<{ quantity: number }>('SELECT quantity FROM hold_items WHERE hold_id = $1 ORDER BY quantity', [
          four.body.hold.id,
        ])
        expect(parts.map((p) => p.quantity).reduce((x, y) => x + y)).toBe(4)
        expect(parts.length).toBeGreaterThan(1)
        // 30 visitors for the 6 left, all at once: exactly 6 win, the others are told none are left.
        const crowd = await Promise.all(Array.from({ length: 30 }, (_, i) => tokenFor(`v-ga-crowd-${i}`)))
        const results = await Promise.all(
          crowd.map((t) => call(app, 'POST', `/events/${event}/holds`, { token: t, body: { items: one('ga') } })),
        )
        expect(results.filter((r) => r.status === 201)).toHaveLength(6)
        for (const r of results.filter((r) => r.status !== 201)) {
          expect(r).toMatchObject({
            status: 409,
            body: { error: { code: 'ERR_ITEMS_SHORT', short: [{ item: 'ga', wanted: 1, left: 0 }] } },
          })
        }
        for (const b of await buckets(event, 'ga')) expect(b.held).toBe(b.capacity)
        expect(await itemsOf(app, event, token)).toEqual({
          ga: { item: 'ga', name: 'General admission', total: 10, free: 0, held: 10, sold: 0 },
        })
        // The gate's snapshot counts the item as one unit of capacity 10, and each live hold's quantity.
        const snapshot = await store.stockSnapshot(event)
        const itemUnits = (units: { unit: string }[]) => units.filter((u) => u.unit.startsWith('item:'))
        expect(itemUnits(snapshot.units)).toEqual([{ unit: 'item:ga', capacity: 10, sold: 0 }])
        expect(snapshot.holds).toHaveLength(7)
        expect(snapshot.holds.find((h) => h.id === four.body.hold.id)?.units).toEqual([{ unit: 'item:ga', quantity: 4 }])
        const paid = await call(app, 'POST', `/holds/${four.body.hold.id}/confirm`, {
          token,
          headers: { 'idempotency-key': 'ga-0004-abcdef' },
        })
        const serials = (paid.body.tickets as { serial: number }[]).map((t) => t.serial)
        expect(new Set(serials).size).toBe(4)
        for (const n of serials) expect(n >= 1 && n <= 10).toBe(true)
        expect(itemUnits((await store.stockSnapshot(event)).units)).toEqual([{ unit: 'item:ga', capacity: 10, sold: 4 }])
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token })).body).toEqual({ sold: 4, tickets: 4, paid: 4, ok: true })
      })

      it('200 guests for 10 rooms on two nights, packages clicked in both orders: exactly 10 sold a night, invariant intact', async () => {
        const rooms: ItemSeed[] = [
          { id: 'night-12', quantity: 10 },
          { id: 'night-13', quantity: 10 },
        ]
        const { app, event } = await setup({ items: rooms })
        const guests = await Promise.all(
          Array.from({ length: 200 }, async (_, i) => {
            const items = [one('night-12', 'night-13'), one('night-13', 'night-12'), one('night-12'), one('night-13')][i % 4] as ItemClaim[]
            return { visitor: `fest-${i}`, items, token: await tokenFor(`fest-${i}`) }
          }),
        )
        const results = await Promise.all(
          guests.map((g) => call(app, 'POST', `/events/${event}/holds`, { token: g.token, body: { items: g.items } })),
        )
        expect(results.filter((r) => r.status !== 201 && r.status !== 409)).toEqual([])
        const winners = results.map((r, i) => ({ r, g: guests[i]! })).filter(({ r }) => r.status === 201)
        const confirmed = await Promise.all(
          winners.map(({ r, g }) =>
            call(app, 'POST', `/holds/${r.body.hold.id}/confirm`, { token: g.token, headers: { 'idempotency-key': `pay-${g.visitor}-x` } }),
          ),
        )
        expect(confirmed.every((r) => r.status === 200)).toBe(true)
        expect(await itemsOf(app, event, guests[0]!.token)).toMatchObject({
          'night-12': { sold: 10, held: 0, free: 0 },
          'night-13': { sold: 10, held: 0, free: 0 },
        })
        expect((await call(app, 'GET', `/events/${event}/invariant`, { token: guests[0]!.token })).body).toEqual({
          sold: 20,
          tickets: 20,
          paid: 20,
          ok: true,
        })
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

    describe('the end of the session after a purchase', () => {
      /** A confirm's status and its Anteroom-Command header (null without one). */
      async function confirm(app: App, hold: string, token: string, key: string) {
        const res = await app.request(`/holds/${hold}/confirm`, {
          method: 'POST',
          headers: { 'anteroom-admission': token, 'content-type': 'application/json', 'idempotency-key': key },
        })
        return { status: res.status, command: res.headers.get('anteroom-command') }
      }

      it('a confirmed purchase, and a repeat of it, say Anteroom-Command: end-session; a decline or a lost hold does not', async () => {
        const { app, event, payments } = await setup({ endSessionOnPurchase: true })
        const token = await tokenFor('v-done')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['D1'] } })
        payments.declineNext = 1
        expect(await confirm(app, held.body.hold.id, token, 'done-0001-abcdef')).toEqual({ status: 402, command: null })
        expect(await confirm(app, held.body.hold.id, token, 'done-0002-abcdef')).toEqual({ status: 200, command: 'end-session' })
        // The first answer may have been lost: its repeat ends the session too.
        expect(await confirm(app, held.body.hold.id, token, 'done-0002-abcdef')).toEqual({ status: 200, command: 'end-session' })
        const late = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['D2'] } })
        await expireHold(late.body.hold.id)
        expect(await confirm(app, late.body.hold.id, token, 'done-0003-abcdef')).toEqual({ status: 409, command: null })
      })

      it('without endSessionOnPurchase, a purchase says nothing to the edge', async () => {
        const { app, event } = await setup()
        const token = await tokenFor('v-quiet')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['D3'] } })
        expect(await confirm(app, held.body.hold.id, token, 'quiet-0001-abcdef')).toEqual({ status: 200, command: null })
      })
    })

    describe('bodies', () => {
      /** The app on a real Node HTTP server, as `npm start` runs it. */
      async function listen(app: App): Promise<{ port: number; close: () => Promise<void> }> {
        const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
        await new Promise((r) => (server.listening ? r(null) : server.once('listening', r)))
        const { port } = server.address() as { port: number }
        return { port, close: () => new Promise<void>((r) => server.close(() => r())) }
      }

      /**
       * Sends a request head and whatever `send` writes, over a raw socket, and resolves with the
       * answer as soon as it has arrived, whether or not the request body was finished.
       */
      function rawRequest(port: number, head: string, send: (write: (data: string) => Promise<void>) => Promise<void>) {
        return new Promise<{ status: number; headers: Record<string, string>; body: Record<string, unknown>; sent: number }>(
          (resolve, reject) => {
            const socket = connect(port, '127.0.0.1')
            let received = Buffer.alloc(0)
            let sent = 0
            let answered = false
            socket.on('error', (err) => {
              if (!answered) reject(err)
            })
            socket.on('data', (data) => {
              received = Buffer.concat([received, data])
              const end = received.indexOf('\r\n\r\n')
              if (end < 0) return
              const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n')
              const headers = Object.fromEntries(
                lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
              )
              const length = Number(headers['content-length'])
              if (received.length - end - 4 < length) return
              answered = true
              resolve({
                status: Number(statusLine.split(' ')[1]),
                headers,
                body: JSON.parse(received.subarray(end + 4, end + 4 + length).toString('utf8')),
                sent,
              })
              socket.destroy()
            })
            const write = (data: string) =>
              new Promise<void>((done) => {
                if (answered || socket.destroyed) return done()
                sent += Buffer.byteLength(data)
                socket.write(data, () => done())
              })
            socket.once('connect', () => {
              void write(head)
                .then(() => send(write))
                .catch(() => {})
            })
          },
        )
      }

      it('holds, confirms and releases take JSON only: form, multipart and text/plain bodies get a 415 and change nothing', async () => {
        const { app, event, payments } = await setup()
        const token = await tokenFor('v-types')
        const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['A1'] } })
        expect(held.status).toBe(201)
        const hold = held.body.hold.id as string
        // What a cross-site form can send: its three encodings, and JSON text posted as text/plain.
        const bodies: [string | undefined, string | Uint8Array<ArrayBuffer>][] = [
          ['application/x-www-form-urlencoded', 'seats=A2'],
          ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="seats"\r\n\r\nA2\r\n--x--\r\n'],
          ['text/plain', '{"seats": ["A2"]}'],
          ['text/plain;charset=UTF-8', '{"seats": ["A2"]}'],
          [undefined, new TextEncoder().encode('{"seats": ["A2"]}')],
        ]
        const send = (method: string, path: string, type: string | undefined, body?: string | Uint8Array<ArrayBuffer>) =>
          app.request(path, {
            method,
            headers: { 'anteroom-admission': token, 'idempotency-key': `types-${seq}-abcdef`, ...(type ? { 'content-type': type } : {}) },
            body,
          })
        for (const [type, body] of bodies) {
          for (const [method, path] of [
            ['POST', `/events/${event}/holds`],
            ['POST', `/holds/${hold}/confirm`],
            ['DELETE', `/holds/${hold}`],
          ] as const) {
            const res = await send(method, path, type, body)
            expect(res.status, `${method} ${path} ${type}`).toBe(415)
            const answer = (await res.json()) as { error: { code: string; message: string; accepted: string[] } }
            expect(answer.error).toMatchObject({ code: 'ERR_UNSUPPORTED_MEDIA_TYPE', accepted: ['application/json'] })
            expect(answer.error.message).toMatch(/Content-Type: application\/json/)
          }
        }
        // A POST says application/json even without a body; a form-typed empty POST is refused too.
        for (const type of [undefined, 'application/x-www-form-urlencoded', 'text/plain']) {
          expect((await send('POST', `/holds/${hold}/confirm`, type)).status, `empty ${type}`).toBe(415)
        }
        expect(payments.charges).toHaveLength(0)
        expect(await statuses(event)).toMatchObject({ A1: 'held', A2: 'free' })
        // JSON with a charset parameter is JSON; a DELETE without a body needs no type at all.
        expect((await send('POST', `/events/${event}/holds`, 'Application/JSON; charset=utf-8', '{"seats": ["A2"]}')).status).toBe(201)
        expect((await send('POST', `/holds/${hold}/confirm`, 'application/json')).status).toBe(200)
        expect(payments.charges).toHaveLength(1)
      })

      it('a body over the limit gets a 413 without being read; the largest hold there can be fits', async () => {
        const { app, event } = await setup()
        const token = await tokenFor('v-big')
        const headers = { 'anteroom-admission': token, 'content-type': 'application/json' }
        const tooMany = JSON.stringify({ seats: Array.from({ length: 10_000 }, (_, i) => `A${i}`) })
        for (const [method, path] of [
          ['POST', `/events/${event}/holds`],
          ['DELETE', `/holds/00000000-0000-4000-8000-000000000000`],
        ] as const) {
          const res = await app.request(path, { method, headers, body: tooMany })
          expect(res.status, method).toBe(413)
          expect(await res.json()).toEqual({
            error: { code: 'ERR_BODY_TOO_LARGE', message: `The body may be at most ${MAX_BODY_BYTES} bytes`, limit: MAX_BODY_BYTES },
          })
        }
        // An 8 MiB stream: the origin stops pulling a little after the limit.
        let pulled = 0
        const chunk = new TextEncoder().encode(`{"seats": [${'"A1",'.repeat(204)}`.padEnd(1024, ' '))
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (pulled >= 8 * 1024 * 1024) return controller.close()
            pulled += chunk.byteLength
            controller.enqueue(chunk)
          },
        })
        const res = await app.request(`/events/${event}/holds`, { method: 'POST', headers, body: stream, duplex: 'half' } as RequestInit)
        expect(res.status).toBe(413)
        expect(pulled).toBeGreaterThan(MAX_BODY_BYTES)
        expect(pulled).toBeLessThanOrEqual(MAX_BODY_BYTES + 3 * chunk.byteLength)
        // 50 seats of 16 characters, pretty-printed, is well under the limit: judged on its seats, not its size.
        const largest = JSON.stringify({ seats: Array.from({ length: 50 }, (_, i) => `A${String(i).padStart(15, '0')}`) }, null, 4)
        expect(largest.length).toBeLessThan(MAX_BODY_BYTES)
        const judged = await call(app, 'POST', `/events/${event}/holds`, { token, body: largest })
        expect(judged.status).toBe(400)
        expect(judged.body.error.message).toMatch(/at most 4 seats in one hold, got 50/)
        expect(Object.values(await statuses(event)).every((s) => s === 'free')).toBe(true)
      })

      it('over HTTP: a Content-Length over the limit, or a chunked body passing it, is answered 413 before the client has finished sending', async () => {
        const { app, event } = await setup()
        const token = await tokenFor('v-wire')
        const server = await listen(app)
        try {
          const head = (framing: string) =>
            `POST /events/${event}/holds HTTP/1.1\r\nHost: origin.test\r\nAnteroom-Admission: ${token}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`
          // Announces 8 MiB and sends none of it: the answer cannot have waited for the body.
          const declared = await rawRequest(server.port, head(`Content-Length: ${8 * 1024 * 1024}`), async () => {})
          expect(declared).toMatchObject({ status: 413, body: { error: { code: 'ERR_BODY_TOO_LARGE' } } })
          expect(declared.headers.connection).toBe('close')
          // Chunked, one KiB at a time, past the limit, and never finished (no last chunk).
          const piece = ' '.repeat(1024)
          const chunked = await rawRequest(server.port, head('Transfer-Encoding: chunked'), async (write) => {
            await write(`${(1 + piece.length).toString(16)}\r\n{${piece}\r\n`)
            for (let sent = 1024; sent <= MAX_BODY_BYTES + 2048; sent += 1024) await write(`${piece.length.toString(16)}\r\n${piece}\r\n`)
          })
          expect(chunked).toMatchObject({ status: 413, body: { error: { code: 'ERR_BODY_TOO_LARGE', limit: MAX_BODY_BYTES } } })
          expect(chunked.headers.connection).toBe('close')
          // A chunked body under the limit, in several chunks, is read whole and served.
          const json = JSON.stringify({ seats: ['C1', 'C2'] })
          const fine = await rawRequest(server.port, head('Transfer-Encoding: chunked'), async (write) => {
            for (const part of [json.slice(0, 5), json.slice(5, 12), json.slice(12)])
              await write(`${part.length.toString(16)}\r\n${part}\r\n`)
            await write('0\r\n\r\n')
          })
          expect(fine).toMatchObject({ status: 201, body: { hold: { seats: ['C1', 'C2'] } } })
          // And a form post over the wire is a 415.
          const form = 'seats=A1'
          const refused = await rawRequest(
            server.port,
            head(`Content-Length: ${form.length}`).replace('application/json', 'application/x-www-form-urlencoded'),
            (write) => write(form),
          )
          expect(refused).toMatchObject({ status: 415, body: { error: { code: 'ERR_UNSUPPORTED_MEDIA_TYPE' } } })
        } finally {
          await server.close()
        }
        expect(await statuses(event)).toMatchObject({ A1: 'free', C1: 'held', C2: 'held' })
      })
    })

    describe('open admissions (issued by the edge without its store)', () => {
      it('each open-admitted visitor is their own identity: their own holds, their own 4-seat limit, logged as open', async () => {
        const { app, event, payments, logs } = await setup()
        const a = await openTokenFor('open-a')
        const b = await openTokenFor('open-b')
        const heldA = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { seats: ['A1', 'A2'] } })
        const heldB = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { seats: ['B1', 'B2'] } })
        expect([heldA.status, heldB.status]).toEqual([201, 201])
        const [holdA, holdB] = [heldA.body.hold.id as string, heldB.body.hold.id as string]
        // Neither can confirm or release the other's hold.
        for (const [token, other] of [
          [b, holdA],
          [a, holdB],
        ] as const) {
          const confirm = await call(app, 'POST', `/holds/${other}/confirm`, { token, headers: { 'idempotency-key': `steal-${other}` } })
          expect(confirm).toMatchObject({ status: 404, body: { error: { code: 'ERR_NOT_FOUND' } } })
          expect((await call(app, 'DELETE', `/holds/${other}`, { token })).status).toBe(404)
        }
        expect(payments.charges).toHaveLength(0)
        expect(await statuses(event)).toMatchObject({ A1: 'held', A2: 'held', B1: 'held', B2: 'held' })
        // Each has a limit of their own: four seats apiece, not four between them.
        for (const [token, row] of [
          [a, 'A'],
          [b, 'B'],
        ] as const) {
          expect((await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: [`${row}3`, `${row}4`] } })).status).toBe(201)
          const fifth = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: [`${row}5`] } })
          expect(fifth).toMatchObject({ status: 409, body: { error: { code: 'ERR_VISITOR_LIMIT', limit: 4, current: 4 } } })
        }
        // Their own holds they can pay for and release.
        const paid = await call(app, 'POST', `/holds/${holdA}/confirm`, { token: a, headers: { 'idempotency-key': `open-pay-${holdA}` } })
        expect(paid).toMatchObject({ status: 200, body: { booked: true } })
        expect(await call(app, 'DELETE', `/holds/${holdB}`, { token: b })).toMatchObject({ status: 200, body: { released: ['B1', 'B2'] } })
        const openHolds = logs.filter((l) => l.log === 'hold_open_admission')
        expect(openHolds).toHaveLength(4)
        expect(openHolds.map((l) => l.hold)).toEqual(expect.arrayContaining([holdA, holdB]))
      })

      it('a token without the claim is not open; the verifier says which is which', async () => {
        const { app, event, logs } = await setup()
        const counted = await tokenFor('v-counted')
        expect((await call(app, 'POST', `/events/${event}/holds`, { token: counted, body: { seats: ['D1'] } })).status).toBe(201)
        expect(logs.filter((l) => l.log === 'hold_open_admission')).toEqual([])
        const verify = admissionVerifier({
          jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
          issuer: 'anteroom',
          audience: 'origin',
          keys: createLocalJWKSet(tokens.jwks()),
        })
        expect(await verify(counted)).toMatchObject({ ok: true, admission: { sub: 'v-counted', open: false } })
        expect(await verify(await openTokenFor('v-open'))).toMatchObject({ ok: true, admission: { sub: 'v-open', open: true } })
        // Only the JSON value true makes an admission open.
        const now = Math.floor(Date.now() / 1000)
        for (const open of [false, 'true', 1]) {
          const token = await new SignJWT({ room: 'sale', arr: 0, open })
            .setProtectedHeader({ alg: 'ES256', kid: signingKey.kid })
            .setIssuer('anteroom')
            .setAudience('origin')
            .setSubject('v-odd')
            .setJti('j')
            .setIssuedAt(now)
            .setExpirationTime(now + 60)
            .sign(signingKey.privateKey)
          expect(await verify(token), String(open)).toMatchObject({ ok: true, admission: { open: false } })
        }
        expect(() => admissionVerifier({ jwksUrl: 'http://x', issuer: 'i', audience: 'a', openAdmissions: 'deny' as 'refuse' })).toThrow(
          /openAdmissions/,
        )
      })

      it('an origin that refuses open admissions answers 401 ERR_ADMISSION_OPEN and changes nothing; counted ones pass', async () => {
        const { app, event } = await setup({ openAdmissions: 'refuse' })
        const open = await openTokenFor('open-refused')
        for (const [method, path, body] of [
          ['POST', `/events/${event}/holds`, { seats: ['A1'] }],
          ['GET', `/events/${event}/seats`, undefined],
        ] as const) {
          const r = await call(app, method, path, { token: open, body })
          expect(r.status, method).toBe(401)
          expect(r.body.error.code).toBe('ERR_ADMISSION_OPEN')
          expect(r.body.error.message).toMatch(/open admission/)
        }
        const res = await app.request(`/events/${event}/seats`, { headers: { 'anteroom-admission': open } })
        expect(res.headers.get('www-authenticate')).toBe('Anteroom error="ERR_ADMISSION_OPEN"')
        expect(Object.values(await statuses(event)).every((s) => s === 'free')).toBe(true)
        const counted = await tokenFor('v-counted-2')
        expect((await call(app, 'POST', `/events/${event}/holds`, { token: counted, body: { seats: ['A1'] } })).status).toBe(201)
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
