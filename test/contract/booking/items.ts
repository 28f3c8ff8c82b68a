// The booking origin contract (test/contract/booking.ts), one topic: counted items (packages, rooms a night): totals, all-or-nothing holds, buckets, limits, refunds.
// Run against each database by bookingContract.
import { describe, expect, it } from 'vitest'
import type { ItemSeed } from '../../../src/adapters/postgres/seed.js'
import type { ItemClaim } from '../../../src/ports/seat-store.js'
import type { App, BookingContext } from '../booking.js'

export function itemsContract(ctx: BookingContext): void {
  const { setup, tokenFor, call, statuses, expireHold } = ctx

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
      return ctx.db.query<{ bucket: number; capacity: number; held: number; sold: number }>(
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
      expect(await ctx.db.query('SELECT 1 FROM hold_items WHERE event_id = $1 AND holder = $2', [event, 'v-it-b'])).toHaveLength(0)
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
      const rows = await ctx.db.query<{ item: string; status: string }>(
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
      expect(await ctx.db.query('SELECT item, serial FROM tickets WHERE event_id = $1 ORDER BY item', [event])).toEqual([
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
      expect(await ctx.db.query('SELECT 1 FROM tickets WHERE event_id = $1', [event])).toHaveLength(0)
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
        i % 3 === 0 ? { seats: [`B${i + 1}`] } : i % 3 === 1 ? { items: one('ga') } : { items: one(i % 2 === 0 ? 'night-12' : 'night-13') },
      )
      const results = await Promise.all(bodies.map((body) => call(app, 'POST', `/events/${event}/holds`, { token: greedy, body })))
      expect(results.filter((r) => r.status === 201)).toHaveLength(4)
      expect(results.filter((r) => r.status === 409 && r.body.error.code === 'ERR_VISITOR_LIMIT')).toHaveLength(8)
      const [units] = await ctx.db.query<{ n: number }>(
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
      expect(await ctx.db.query('SELECT 1 FROM hold_items WHERE event_id = $1', [event])).toHaveLength(1)
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
      const parts = await ctx.db.query<{ quantity: number }>('SELECT quantity FROM hold_items WHERE hold_id = $1 ORDER BY quantity', [
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
}
