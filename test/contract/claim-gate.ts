// The ClaimGate contract: one suite, run against every implementation (memory, Redis, a Redis
// Cluster). Time is passed in, so holds lapse on a controlled clock, never by sleeping.
import { describe, expect, it } from 'vitest'
import type { ClaimGate, GateUnit, StockSnapshot } from '../../src/ports/claim-gate.js'

let seq = 0
const newEvent = () => `g${Date.now().toString(36)}-${seq++}`
const T0 = 1_800_000_000_000
const seat = (s: string): GateUnit => ({ unit: `seat:${s}`, quantity: 1 })
const item = (i: string, quantity: number): GateUnit => ({ unit: `item:${i}`, quantity })

/** Seats A1..A5, and 40 rooms on each of nights 12 and 13. */
const stock = (holds: StockSnapshot['holds'] = [], sold: Record<string, number> = {}): StockSnapshot => ({
  units: [
    ...['A1', 'A2', 'A3', 'A4', 'A5'].map((s) => ({ unit: `seat:${s}`, capacity: 1, sold: sold[`seat:${s}`] ?? 0 })),
    { unit: 'item:night-12', capacity: 40, sold: sold['item:night-12'] ?? 0 },
    { unit: 'item:night-13', capacity: 40, sold: sold['item:night-13'] ?? 0 },
  ],
  holds,
})

export function claimGateContract(name: string, make: () => Promise<ClaimGate>): void {
  describe(`ClaimGate contract: ${name}`, () => {
    it('knows nothing of an event it was never given: every claim goes to the database', async () => {
      const gate = await make()
      const event = newEvent()
      expect(await gate.claim({ event, hold: 'h1', units: [seat('A1')], ttlMs: 1000, now: T0 })).toEqual({ kind: 'unknown' })
      expect(await gate.counts(event, T0)).toBeUndefined()
      await gate.release(event, 'h1', T0)
      await gate.sold(event, 'h1', [seat('A1')], T0)
      expect(await gate.counts(event, T0)).toBeUndefined()
    })

    it('is built from the database, then passes a claim once and refuses the next, with the nearest free candidates', async () => {
      const gate = await make()
      const event = newEvent()
      expect(await gate.reconcile(event, stock(), 2000, T0)).toEqual({ repairs: 0, rebuilt: true })
      expect(await gate.counts(event, T0)).toEqual({ free: 85, held: 0, sold: 0, reconciledAt: T0, repairs: 0 })
      expect(await gate.claim({ event, hold: 'h1', units: [seat('A2'), seat('A3')], ttlMs: 60_000, now: T0 + 1 })).toEqual({ kind: 'pass' })
      // The same hold asked again (a retry) passes without taking more.
      expect(await gate.claim({ event, hold: 'h1', units: [seat('A2'), seat('A3')], ttlMs: 60_000, now: T0 + 2 })).toEqual({ kind: 'pass' })
      const refused = await gate.claim({
        event,
        hold: 'h2',
        units: [seat('A1'), seat('A3')],
        ttlMs: 60_000,
        candidates: ['seat:A2', 'seat:A4', 'seat:A5', 'seat:A1'],
        nearest: 2,
        now: T0 + 3,
      })
      expect(refused).toEqual({ kind: 'gone', gone: [{ unit: 'seat:A3', left: 0 }], nearest: ['seat:A4', 'seat:A5'] })
      // All or nothing: the refused claim marked nothing, A1 is still free.
      expect(await gate.claim({ event, hold: 'h3', units: [seat('A1')], ttlMs: 60_000, now: T0 + 4 })).toEqual({ kind: 'pass' })
      expect(await gate.counts(event, T0 + 5)).toEqual({ free: 82, held: 3, sold: 0, reconciledAt: T0, repairs: 0 })
      // A unit the gate does not know (a seat added since): the database decides.
      expect(await gate.claim({ event, hold: 'h4', units: [seat('Z9')], ttlMs: 60_000, now: T0 + 6 })).toEqual({ kind: 'unknown' })
    })

    it('claims counted items with quantities, all or nothing, and says how many are left', async () => {
      const gate = await make()
      const event = newEvent()
      await gate.reconcile(event, stock(), 2000, T0)
      for (let i = 0; i < 19; i++) {
        expect(
          await gate.claim({ event, hold: `p${i}`, units: [item('night-12', 2), item('night-13', 2)], ttlMs: 60_000, now: T0 }),
        ).toEqual({
          kind: 'pass',
        })
      }
      expect(await gate.claim({ event, hold: 'single', units: [item('night-13', 1)], ttlMs: 60_000, now: T0 })).toEqual({ kind: 'pass' })
      // Night 12 has 2 left, night 13 has 1: a package of two nights for two is refused whole.
      expect(await gate.claim({ event, hold: 'late', units: [item('night-12', 2), item('night-13', 2)], ttlMs: 60_000, now: T0 })).toEqual({
        kind: 'gone',
        gone: [{ unit: 'item:night-13', left: 1 }],
        nearest: [],
      })
      expect(await gate.claim({ event, hold: 'late2', units: [item('night-12', 2)], ttlMs: 60_000, now: T0 })).toEqual({ kind: 'pass' })
      expect(await gate.counts(event, T0)).toMatchObject({ free: 5 + 0 + 1, held: 79 })
    })

    it('gives back what the database refused or the visitor released, and takes sold units for good', async () => {
      const gate = await make()
      const event = newEvent()
      await gate.reconcile(event, stock(), 2000, T0)
      await gate.claim({ event, hold: 'h1', units: [seat('A1')], ttlMs: 60_000, now: T0 })
      await gate.release(event, 'h1', T0 + 1)
      expect(await gate.claim({ event, hold: 'h2', units: [seat('A1')], ttlMs: 60_000, now: T0 + 2 })).toEqual({ kind: 'pass' })
      await gate.sold(event, 'h2', [seat('A1')], T0 + 3)
      // Sold is for good: neither a release nor the hold's time running out gives it back.
      await gate.release(event, 'h2', T0 + 4)
      expect(await gate.claim({ event, hold: 'h3', units: [seat('A1')], ttlMs: 60_000, now: T0 + 120_000 })).toMatchObject({ kind: 'gone' })
      expect(await gate.counts(event, T0 + 120_000)).toEqual({ free: 84, held: 0, sold: 1, reconciledAt: T0, repairs: 0 })
    })

    it('lets a hold lapse when its time runs out, on the clock it is given, and counts it back', async () => {
      const gate = await make()
      const event = newEvent()
      await gate.reconcile(event, stock(), 2000, T0)
      await gate.claim({ event, hold: 'h1', units: [seat('A1'), item('night-12', 40)], ttlMs: 10_000, now: T0 })
      expect(await gate.claim({ event, hold: 'h2', units: [seat('A1')], ttlMs: 10_000, now: T0 + 9_999 })).toMatchObject({ kind: 'gone' })
      expect(await gate.counts(event, T0 + 9_999)).toMatchObject({ free: 44, held: 41 })
      expect(await gate.counts(event, T0 + 10_000)).toMatchObject({ free: 85, held: 0 })
      expect(await gate.claim({ event, hold: 'h2', units: [seat('A1')], ttlMs: 10_000, now: T0 + 10_001 })).toEqual({ kind: 'pass' })
      // A confirm after the gate let the hold lapse (the gate's clock ahead of the database's) takes the units again.
      await gate.claim({ event, hold: 'h3', units: [item('night-13', 5)], ttlMs: 1_000, now: T0 + 10_001 })
      await gate.sold(event, 'h3', [item('night-13', 5)], T0 + 20_000)
      expect(await gate.counts(event, T0 + 20_000)).toEqual({ free: 79, held: 1, sold: 5, reconciledAt: T0, repairs: 0 })
    })

    it('reconciles with the database: adds holds it missed, drops stale ones, keeps claims in flight, counts the repairs', async () => {
      const gate = await make()
      const event = newEvent()
      await gate.reconcile(event, stock(), 2000, T0)
      await gate.claim({ event, hold: 'stale', units: [seat('A1')], ttlMs: 600_000, now: T0 })
      await gate.claim({ event, hold: 'db-has-it', units: [seat('A2')], ttlMs: 600_000, now: T0 })
      await gate.claim({ event, hold: 'in-flight', units: [seat('A3')], ttlMs: 600_000, now: T0 + 9_000 })
      // The database: 'db-has-it' and a hold made while the gate was away ('missed', A4); A5 sold.
      const db = stock(
        [
          { id: 'db-has-it', expiresAt: T0 + 600_000, units: [seat('A2')] },
          { id: 'missed', expiresAt: T0 + 600_000, units: [seat('A4')] },
        ],
        { 'seat:A5': 1 },
      )
      const r = await gate.reconcile(event, db, 2000, T0 + 10_000)
      // Dropped 'stale' (A1 wrong), added 'missed' (A4 wrong), A5 wrong: 2 holds + 3 units.
      expect(r).toEqual({ repairs: 5, rebuilt: false })
      expect(await gate.counts(event, T0 + 10_000)).toEqual({ free: 80 + 1, held: 3, sold: 1, reconciledAt: T0 + 10_000, repairs: 5 })
      expect(await gate.claim({ event, hold: 'x1', units: [seat('A1')], ttlMs: 1000, now: T0 + 10_001 })).toEqual({ kind: 'pass' })
      for (const s of ['A2', 'A3', 'A4', 'A5'])
        expect(await gate.claim({ event, hold: `x-${s}`, units: [seat(s)], ttlMs: 1000, now: T0 + 10_001 })).toMatchObject({ kind: 'gone' })
      // Once its grace is over, a claim the database never wrote is dropped too.
      const again = await gate.reconcile(event, db, 2000, T0 + 20_000)
      expect(again.repairs).toBeGreaterThan(0)
      expect((await gate.counts(event, T0 + 20_000))?.repairs).toBe(5 + again.repairs)
      expect(await gate.claim({ event, hold: 'y', units: [seat('A3')], ttlMs: 1000, now: T0 + 20_001 })).toEqual({ kind: 'pass' })
      // In agreement, a reconcile repairs nothing.
      const calm = stock([], { 'seat:A5': 1 })
      await gate.reconcile(event, calm, 0, T0 + 30_000)
      expect(await gate.reconcile(event, calm, 0, T0 + 30_001)).toEqual({ repairs: 0, rebuilt: false })
    })

    it('never passes more claims than there is stock, however many arrive at once', async () => {
      const gate = await make()
      const event = newEvent()
      await gate.reconcile(event, stock(), 2000, T0)
      const claims = Array.from({ length: 400 }, (_, i) =>
        gate.claim({
          event,
          hold: `c${i}`,
          units: i % 2 === 0 ? [item('night-12', 1), item('night-13', 1)] : [item('night-13', 1), item('night-12', 1)],
          ttlMs: 60_000,
          now: T0,
        }),
      )
      const answers = await Promise.all(claims)
      expect(answers.filter((a) => a.kind === 'pass')).toHaveLength(40)
      expect(await gate.counts(event, T0)).toMatchObject({ free: 5, held: 80 })
    })
  })
}
