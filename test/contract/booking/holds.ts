// The booking origin contract (test/contract/booking.ts), one topic: seats and holds: listing, holding, limits, expiry on the database's clock, release.
// Run against each database by bookingContract.
import { describe, expect, it } from 'vitest'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../../../src/core/admission-token.js'
import type { BookingContext } from '../booking.js'

export function holdsContract(ctx: BookingContext): void {
  const { setup, tokenFor, call, statuses, expireHold } = ctx

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
      const [{ now }] = (await ctx.db.query<{ now: Date }>('SELECT now()')) as [{ now: Date }]
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
      const expired = await ctx.tokens.sign(
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
      expect(await ctx.db.query('SELECT 1 FROM holds WHERE event_id = $1', [event])).toHaveLength(0)
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
}
