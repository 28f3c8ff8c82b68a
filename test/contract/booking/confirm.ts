// The booking origin contract (test/contract/booking.ts), one topic: confirm (charged once, booked once, refunds when a hold is lost) and the end of the session
// after a purchase.
// Run against each database by bookingContract.
import { describe, expect, it } from 'vitest'
import type { App, BookingContext } from '../booking.js'

export function confirmContract(ctx: BookingContext): void {
  const { setup, tokenFor, call, statuses, expireHold } = ctx

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
      expect(await ctx.db.query('SELECT seat FROM tickets WHERE event_id = $1 ORDER BY seat', [event])).toEqual([
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
      expect(await ctx.db.query('SELECT 1 FROM tickets WHERE event_id = $1', [event])).toHaveLength(0)
      const payment = await ctx.db.query<{ status: string }>('SELECT status FROM payments WHERE idempotency_key = $1', ['slow-0001-abcdef'])
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
}
