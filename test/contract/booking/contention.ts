// The booking origin contract (test/contract/booking.ts), one topic: the proofs under contention: never a seat sold twice, no deadlock surfaced.
// Run against each database by bookingContract.
import { describe, expect, it } from 'vitest'
import type { BookingContext } from '../booking.js'

export function contentionContract(ctx: BookingContext): void {
  const { setup, tokenFor, call, statuses } = ctx

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
}
