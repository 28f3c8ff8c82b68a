// The sale simulator's verdicts (sim/verdicts.ts) on synthetic timelines, each of which must catch its violation: FIFO, rate, active sessions, places, recovery, ETA, bookings, and the sold-out sale's.
import { describe, expect, it } from 'vitest'
import {
  abandonedVerdict,
  activeVerdict,
  bookingVerdicts,
  densestWindow,
  etaAccuracy,
  etaVerdict,
  everyoneVerdict,
  extraWait,
  fifoInversions,
  fifoVerdict,
  type GateSample,
  maxCertainActive,
  noAdmissionAfterVerdict,
  nothingFreeStretches,
  paceBound,
  placesVerdict,
  rateVerdicts,
  recoveryVerdict,
  type SoldOutInput,
  type StoreFault,
  type StoreSample,
  sellOut,
  soldOutToldVerdict,
  type VisitorRecord,
  worstWindow,
} from '../sim/verdicts.js'
import { admitted } from './support/sim-visitor.js'

describe('verdicts on synthetic timelines', () => {
  it('FIFO: grant order is compared, not pick-up order; a certain inversion is reported', () => {
    // b arrived after a and picked up first, but a's grant may have come first (intervals overlap): no inversion.
    const overlap = [admitted(1, 0, 1000, 3000), admitted(2, 10, 900, 2000)]
    expect(fifoInversions(overlap).count).toBe(0)
    // a was still queued at 5000 while b had already been admitted at 2000: a certain inversion.
    const inverted = [admitted(1, 0, 5000, 7000), admitted(2, 10, 900, 2000), admitted(3, 20, 8000, 9000)]
    expect(fifoInversions(inverted)).toEqual({ count: 1, example: [1, 2] })
    expect(fifoVerdict(inverted).ok).toBe(false)
    // A visitor who gave up is not held to FIFO, nor one whose polls were abandonAfter apart (dropped, rejoined).
    expect(fifoInversions(inverted.map((v) => (v.id === 1 ? { ...v, abandoned: true } : v))).count).toBe(0)
    expect(
      fifoInversions(
        inverted.map((v) => (v.id === 1 ? { ...v, maxGapMs: 6000 } : v)),
        6000,
      ).count,
    ).toBe(0)
  })

  it('rate: the paced bound of a real 60-s window, the per-second cap, on the visitor side and in the store record', () => {
    // 6 a minute: one every 10 s, at most floor(6 / 60) + 1 = 1 in any second, and 61 s of slots in 60 s: floor(61 / 10) + 1 = 7.
    expect(paceBound(6, 60_000)).toBe(7)
    const eight = Array.from({ length: 8 }, (_, i) => admitted(i, 0, i * 7000, i * 7000 + 100))
    expect(worstWindow(eight, 60_000).count).toBe(8)
    expect(rateVerdicts(eight, [], 6)[1]!.ok).toBe(false)
    const spread = Array.from({ length: 8 }, (_, i) => admitted(i, 0, i * 10_000, i * 10_000 + 100))
    expect(rateVerdicts(spread, [], 6)[1]!.ok).toBe(true)
    // Two grants certainly inside one second at 6 a minute fail the one-second rule...
    expect(rateVerdicts([admitted(1, 0, 0, 100), admitted(2, 0, 200, 300)], [], 6)[0]!.ok).toBe(false)
    expect(rateVerdicts(spread, [], 6)[0]!.ok).toBe(true)
    // ...and so do two in the store's record 999 ms apart, while 1000 ms apart is two windows.
    expect(densestWindow([0, 500, 999], 1000).count).toBe(3)
    expect(densestWindow([0, 500, 1000], 1000).count).toBe(2)
    expect(rateVerdicts([], [], { perMinute: 6, totalActiveUsers: 10, record: [0, 999] })[0]!.ok).toBe(false)
    expect(rateVerdicts([], [], { perMinute: 6, totalActiveUsers: 10, record: [0, 1000, 2000] })[0]!.ok).toBe(true)
    // The store's own admittedLastMinute over the bound fails too.
    expect(rateVerdicts([], [{ t: 0, waiting: 0, active: 0, admittedLastMinute: 8 }], 6)[1]!.ok).toBe(false)
  })

  it('rate: the saturated rate counts only a long line with room to admit, outside a recovery', () => {
    // 120 a minute (2 a second, cap 3): a line of 100 and an empty room for 10 s, samples every 250 ms.
    const samples: StoreSample[] = Array.from({ length: 41 }, (_, i) => ({ t: i * 250, waiting: 100, active: 0, admittedLastMinute: 0 }))
    const at = (perSecond: number, seconds: number) => Array.from({ length: perSecond * seconds }, (_, i) => (i + 0.5) * (1000 / perSecond))
    const rate = (record: number[], extra: Partial<Parameters<typeof rateVerdicts>[2] & object> = {}) =>
      rateVerdicts([], samples, { perMinute: 120, totalActiveUsers: 100, record, ...extra })[2]!
    expect(rate(at(2, 10))).toMatchObject({ ok: true })
    expect(rate(at(2, 10)).measured).toMatch(/^120 a minute \(1\.000/)
    // 1.5 a second is 0.75 of the setting.
    expect(rate(at(2, 10).filter((_, i) => i % 4 !== 3))).toMatchObject({ ok: false })
    // A full room is not saturated (no sample qualifies: not measured), nor a recovery.
    expect(
      rateVerdicts(
        [],
        samples.map((x) => ({ ...x, active: 99 })),
        { perMinute: 120, totalActiveUsers: 100, record: [] },
      )[2],
    ).toMatchObject({
      ok: true,
      info: true,
    })
    expect(rate([], { excluded: [[0, 10_000]] })).toMatchObject({ info: true })
    // Slots reserved after a loss count as taken.
    expect(
      rateVerdicts(
        [],
        samples.map((x) => ({ ...x, reserved: 99 })),
        { perMinute: 120, totalActiveUsers: 100, record: [] },
      )[2]!.info,
    ).toBe(true)
  })

  it('active: sessions certainly running at once over totalActiveUsers fail', () => {
    const three = [admitted(1, 0, 0, 100), admitted(2, 0, 0, 200), admitted(3, 0, 0, 300)]
    expect(activeVerdict(three, [], 3, 10_000).ok).toBe(true)
    expect(activeVerdict(three, [], 2, 10_000).ok).toBe(false)
    // Back to back (the first session over before the third starts): fine with 2.
    const serial = [admitted(1, 0, 0, 100), admitted(2, 0, 0, 200), admitted(3, 0, 20_000, 20_100)]
    expect(activeVerdict(serial, [], 2, 10_000).ok).toBe(true)
    expect(activeVerdict([], [{ t: 0, waiting: 0, active: 3, admittedLastMinute: 0 }], 2, 10_000).ok).toBe(false)
  })

  it('abandoned slots: a held slot is allowed until abandonAfter after the last poll, not longer', () => {
    const quitter: VisitorRecord = { id: 1, arrivedAt: 0, serverArrival: 0, lastPollSent: 1000, abandoned: true, tickets: [] }
    const later = admitted(2, 10, 1500, 2000, 10_000)
    const o = { sessionMs: 10_000, abandonAfterMs: 6000, slackMs: 500 }
    // Store says 2 active at 5 s (the quitter's held slot and the later visitor): allowed.
    const ok: StoreSample[] = [{ t: 5000, waiting: 0, active: 2, admittedLastMinute: 2 }]
    const good = abandonedVerdict([quitter, later], ok, o)
    expect(good.ok).toBe(true)
    expect(good.measured).toMatch(/^1 held/)
    // Still 2 active at 9 s: the quitter's slot should have come back at 7 s.
    const bad: StoreSample[] = [...ok, { t: 9000, waiting: 0, active: 2, admittedLastMinute: 2 }]
    expect(abandonedVerdict([quitter, later], bad, o).ok).toBe(false)
    // An admitted visitor's request late in the session renews it: their slot may stay taken that much longer.
    const renewed = { ...admitted(3, 20, 1500, 2000, 20_000), lastActivityReceived: 8000 }
    const late: StoreSample[] = [{ t: 15_000, waiting: 0, active: 1, admittedLastMinute: 0 }]
    expect(abandonedVerdict([renewed], late, o).ok).toBe(true)
    expect(abandonedVerdict([{ ...renewed, lastActivityReceived: 2100 }], late, o).ok).toBe(false)
  })

  it('active: a renewal (or a re-registration after a loss) keeps the session running', () => {
    const a = admitted(1, 0, 0, 100)
    const b = admitted(2, 0, 15_000, 15_100)
    expect(maxCertainActive([a, b], 10_000)).toBe(1)
    // a's session was renewed at 9 s: it runs until 19 s, past b's admission.
    expect(maxCertainActive([{ ...a, sessionEnd: 19_000 }, b], 10_000)).toBe(2)
  })

  it('active: a session the origin ended (end-session after a purchase) runs only until that request', () => {
    const a = admitted(1, 0, 0, 100)
    const b = admitted(2, 0, 5000, 5100)
    expect(maxCertainActive([a, b], 10_000)).toBe(2)
    expect(maxCertainActive([{ ...a, sessionEndedAt: 3000 }, b], 10_000)).toBe(1)
  })

  it('FIFO across a store loss: the memory before and after it are compared apart', () => {
    const fault: StoreFault = { kind: 'flush', start: 10_000, end: 10_010, busy: 0, reregistered: 0, browsingAfter: 0 }
    // 1 was granted just before the loss and had not collected it; 2 (later) collected before the loss;
    // after it, 1 is granted again (queued answers before and after) and collects at 17 s.
    const one: VisitorRecord = {
      ...admitted(1, 0, 16_000, 17_000),
      lastQueuedBeforeFault: 9000,
      lastQueuedAfterFault: 16_000,
    }
    const two = admitted(2, 10, 9000, 9500)
    // Without the fault, 1's last queued poll (16 s) after 2's admission (9.5 s) looks like an inversion.
    expect(fifoInversions([one, two]).count).toBe(1)
    expect(fifoInversions([one, two], Number.POSITIVE_INFINITY, fault).count).toBe(0)
    // After the loss, 3 (a later arrival) admitted at 12 s while 1 was still queued at 16 s: an inversion.
    const three: VisitorRecord = { ...admitted(3, 20, 11_000, 12_000), lastQueuedBeforeFault: 8000, lastQueuedAfterFault: 11_000 }
    expect(fifoInversions([one, two, three], Number.POSITIVE_INFINITY, fault)).toEqual({ count: 1, example: [1, 3] })
    expect(fifoVerdict([one, two, three], Number.POSITIVE_INFINITY, fault).ok).toBe(false)
    // Before the loss, 1 queued at 9 s while 2 (later) was admitted at 8 s: an inversion of the first store.
    const twoEarly = admitted(2, 10, 7000, 8000)
    expect(fifoInversions([one, twoEarly], Number.POSITIVE_INFINITY, fault).count).toBe(1)
  })

  it('places: a visitor sent back or never admitted is a place lost', () => {
    const fault: StoreFault = { kind: 'restart', start: 5000, end: 5200, busy: 3, reregistered: 0, browsingAfter: 0 }
    const ok = admitted(1, 0, 6000, 7000)
    expect(placesVerdict([ok], 6000, fault).ok).toBe(true)
    expect(placesVerdict([{ ...ok, movedBack: 1 }], 6000, fault)).toMatchObject({
      ok: false,
      measured: expect.stringMatching(/^1 \(1 sent back/),
    })
    const stuck: VisitorRecord = { id: 2, arrivedAt: 0, abandoned: false, tickets: [] }
    expect(placesVerdict([ok, stuck], 6000, fault).ok).toBe(false)
    // One who gave up, or whose polls were abandonAfter apart (dropped, rightly), is not counted.
    expect(placesVerdict([ok, { ...stuck, abandoned: true }, { ...stuck, id: 3, maxGapMs: 6000 }], 6000, fault).ok).toBe(true)
  })

  it('recovery: nobody admitted for 2 x refresh + 1 s after a loss, from the store record', () => {
    const fault: StoreFault = {
      kind: 'flush',
      start: 10_000,
      end: 10_005,
      busy: 0,
      recovering: [10_010, 15_000],
      reregistered: 2,
      browsingAfter: 3,
    }
    const good = recoveryVerdict(fault, [9000, 9990, 15_010, 15_020], 5000, 30)
    expect(good.ok).toBe(true)
    expect(good.measured).toContain('no admissions for 5.0 real s (150 sale s)')
    expect(good.measured).toContain('2 of 3 sessions from before it')
    expect(recoveryVerdict(fault, [9990, 12_000], 5000, 30).ok).toBe(false)
    expect(recoveryVerdict({ ...fault, recovering: undefined }, [15_010], 5000, 30).ok).toBe(false)
    // A failover that lost nothing needs no recovery: informational.
    expect(recoveryVerdict({ ...fault, kind: 'failover', recovering: undefined }, [12_000], 5000, 30)).toMatchObject({
      ok: true,
      info: true,
    })
  })

  it('ETA: each shown wait against the real remaining one; a verdict only when required', () => {
    // Admitted at 100 s; shown 100 s at 0 (real 100: within), 50 s at 20 (real 80: off), none at 40, 50 in [40, 70] at 50.
    const v: VisitorRecord = {
      ...admitted(1, 0, 90_000, 100_000),
      estimates: [
        0,
        100,
        Number.NaN,
        Number.NaN,
        20_000,
        50,
        Number.NaN,
        Number.NaN,
        40_000,
        Number.NaN,
        Number.NaN,
        Number.NaN,
        50_000,
        50,
        40,
        70,
      ],
    }
    expect(etaAccuracy([v])).toMatchObject({ estimates: 3, within: 2, nulls: 1, withRange: 1, inRange: 1, tooShort: 1 })
    expect(etaVerdict([v])).toMatchObject({ ok: true, info: true })
    expect(etaVerdict([v], true).ok).toBe(false)
    // A visitor who never got in has no real wait to compare with.
    expect(etaAccuracy([{ ...v, admittedReceived: undefined }]).estimates).toBe(0)
  })

  it('extra wait: the same visitors with and without the fault', () => {
    const fault: StoreFault = { kind: 'flush', start: 1000, end: 1001, busy: 0, reregistered: 0, browsingAfter: 0 }
    const base = [admitted(1, 0, 500, 900), admitted(2, 0, 1500, 2000)]
    const hit = [admitted(1, 0, 500, 900), admitted(2, 0, 6500, 7000)]
    // Visitor 2 was admitted after the fault, 5 real s later: 150 sale s at 30x.
    expect(extraWait(hit, base, fault, 30)).toMatchObject({ visitors: 1, mean: 150, p50: 150 })
  })

  it('bookings: a seat ticketed twice or a broken invariant is a double booking', () => {
    const a = { ...admitted(1, 0, 0, 100), tickets: ['A1', 'A2'] }
    const b = { ...admitted(2, 0, 0, 100), tickets: ['A3'] }
    const clean = { seats: 40, sold: 3, tickets: 3, paid: 3, invariantOk: true, soldInMap: 3 }
    expect(bookingVerdicts([a, b], clean).every((v) => v.ok)).toBe(true)
    const twice = { ...b, tickets: ['A2'] }
    expect(bookingVerdicts([a, twice], { ...clean, sold: 2, tickets: 3, invariantOk: false, soldInMap: 2 })[1]).toMatchObject({
      ok: false,
    })
    expect(bookingVerdicts([a, b], { ...clean, sold: 41, seats: 40 })[0]!.ok).toBe(false)
  })

  it('a visitor who kept polling and never got in fails the run', () => {
    const stuck: VisitorRecord = { id: 1, arrivedAt: 0, abandoned: false, tickets: [] }
    expect(everyoneVerdict([stuck]).ok).toBe(false)
    expect(everyoneVerdict([{ ...stuck, abandoned: true }]).ok).toBe(true)
  })
})

describe('sold-out verdicts on synthetic timelines', () => {
  /** The gate's counts every 250 ms: 10 free until 2 s, all held from 2 s (one lapses at 3 s for a while), all sold from 5 s. */
  const gate: GateSample[] = Array.from({ length: 40 }, (_, i) => {
    const t = i * 250
    if (t < 2000) return { t, free: 10, held: 0, sold: 0 }
    if (t >= 3000 && t < 3500) return { t, free: 1, held: 8, sold: 1 }
    if (t < 5000) return { t, free: 0, held: 9, sold: 1 }
    return { t, free: 0, held: 0, sold: 10 }
  })
  const input = (over: Partial<SoldOutInput> = {}): SoldOutInput => ({
    gate,
    lastSaleAt: 5000,
    record: [100, 900, 1900, 3200, 3600],
    reloadMs: 1000,
    refreshMs: 2000,
    ...over,
  })
  /** A visitor waiting in line from `arrivedAt`, told sold out at `told` (or never), last polling at `last`. */
  const waiting = (id: number, arrivedAt: number, told: number | undefined, last: number): VisitorRecord => ({
    id,
    arrivedAt,
    serverArrival: arrivedAt * 1000,
    lastQueuedSent: Math.min(last, told ?? last),
    lastPollSent: last,
    abandoned: false,
    tickets: [],
    ...(told === undefined ? {} : { soldOutToldAt: told }),
  })

  it('finds the sell-out in the counts: the last stretch with nothing free, and where all of it is sold', () => {
    expect(sellOut(gate)).toEqual({ nothingFreeAt: 3500, soldOutAt: 5000 })
    expect(sellOut(gate.slice(0, 14))).toBeUndefined()
    expect(sellOut([{ t: 0 }, { t: 250 }])).toBeUndefined()
    // The stretches the rate verdict leaves out: nobody is let in then, by design.
    expect(nothingFreeStretches(gate, 1000, 250)).toEqual([
      [1750, 4500],
      [3250, Number.POSITIVE_INFINITY],
    ])
  })

  it('told sold out: everyone waiting within a reload and 1.5 refreshes of the last sale, a later newcomer on their first answer', () => {
    // Deadline: 5 s + 1 s + 3 s + 0.5 s = 9.5 s.
    const inTime = [
      waiting(1, 100, 6200, 6200),
      waiting(2, 200, 9400, 9400),
      { ...waiting(3, 12_000, 12_050, 12_000), lastQueuedSent: undefined },
    ]
    expect(soldOutToldVerdict(inTime, input())).toMatchObject({ ok: true })
    // Still polling past the deadline, untold (the edge never said so): fails.
    expect(soldOutToldVerdict([...inTime, waiting(4, 300, undefined, 9600)], input()).ok).toBe(false)
    // Told too late, after polls that said something else.
    expect(soldOutToldVerdict([...inTime, waiting(5, 300, 9800, 9800)], input()).ok).toBe(false)
    // A newcomer long after the sale who was given a place first and told later: fails.
    expect(soldOutToldVerdict([...inTime, waiting(6, 15_000, 17_500, 17_500)], input()).ok).toBe(false)
    // Gave up before the deadline (or was admitted): nothing to tell.
    expect(soldOutToldVerdict([...inTime, { ...waiting(7, 300, undefined, 5200), abandoned: true }], input()).ok).toBe(true)
    // Nobody told at all, no counts at all, or no sell-out.
    expect(soldOutToldVerdict([waiting(8, 100, undefined, 4000)], input()).ok).toBe(false)
    expect(soldOutToldVerdict(inTime, input({ gate: [{ t: 0 }, { t: 250 }] })).ok).toBe(false)
    expect(soldOutToldVerdict(inTime, input({ gate: gate.slice(0, 14) }))).toMatchObject({ ok: true, info: true })
  })

  it('nobody admitted after the last sale: a grant after it, or after the edge had a reload to see nothing free, fails', () => {
    expect(noAdmissionAfterVerdict([], input())).toMatchObject({ ok: true })
    // A grant 1.2 s after nothing was free (the edge a reload late), before the last sale: allowed.
    expect(noAdmissionAfterVerdict([], input({ record: [100, 4700] })).ok).toBe(true)
    // After the bound (3.5 s + 2 x 1 s + 0.5 s), though before the last sale: fails.
    expect(noAdmissionAfterVerdict([], input({ record: [100, 5900], lastSaleAt: 7000 })).ok).toBe(true)
    expect(noAdmissionAfterVerdict([], input({ record: [100, 6001], lastSaleAt: 7000 })).ok).toBe(false)
    // After the last sale: fails.
    expect(noAdmissionAfterVerdict([], input({ record: [100, 4900], lastSaleAt: 4800 })).ok).toBe(false)
    // Without a store record, the visitor side: a grant certainly after (queued when the bound had passed).
    const late = { ...waiting(1, 100, undefined, 6600), admittedSent: 6600, admittedReceived: 6610, lastQueuedSent: 6400 }
    expect(noAdmissionAfterVerdict([late], input({ record: undefined, lastSaleAt: 7000 })).ok).toBe(false)
    expect(noAdmissionAfterVerdict([], input({ gate: [{ t: 0 }] })).ok).toBe(false)
  })

  it('a visitor told sold out counts as done in a sold-out sale', () => {
    const told: VisitorRecord = { id: 1, arrivedAt: 0, abandoned: false, tickets: [], soldOutToldAt: 10 }
    expect(everyoneVerdict([told], true)).toMatchObject({ ok: true, name: 'everyone who kept polling was admitted or told sold out' })
  })
})
