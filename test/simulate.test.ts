// The sale simulator (sim/): a CI-sized compressed sale that must pass every verdict, the verdicts
// themselves on synthetic timelines (each must catch its violation), and the what-if model on cases
// small enough to work out by hand.
import { createHash, createHmac } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { describe, expect, inject, it } from 'vitest'
import { predict } from '../sim/predict.js'
import { renderReport } from '../sim/report.js'
import { rng, scaleLimits, scheduledArrivalTimes, simulate, tokenArrival } from '../sim/simulate.js'
import {
  abandonedVerdict,
  activeVerdict,
  arrivalRankVerdict,
  bookingVerdicts,
  checkDraw,
  densestWindow,
  drawOrderInversions,
  drawVerdict,
  etaAccuracy,
  etaVerdict,
  everyoneVerdict,
  extraWait,
  fifoAfterOpeningVerdict,
  fifoInversions,
  fifoVerdict,
  type GateSample,
  type JoinRecord,
  maxCertainActive,
  networkCapVerdict,
  noAdmissionAfterVerdict,
  nothingFreeStretches,
  type PublishedDraw,
  paceBound,
  placesVerdict,
  rateVerdicts,
  recoveryVerdict,
  type SoldOutInput,
  type StoreFault,
  type StoreSample,
  sellOut,
  soldOutToldVerdict,
  spearman,
  type VisitorRecord,
  worstWindow,
} from '../sim/verdicts.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'

/** A visitor who arrived at `arrivedAt`, polled queued at `lo` and saw admitted at `hi` (sent hi - 5). */
function admitted(id: number, arrivedAt: number, lo: number, hi: number, serverArrival = arrivedAt * 1000): VisitorRecord {
  return {
    id,
    arrivedAt,
    serverArrival,
    lastQueuedSent: lo,
    admittedSent: hi - 5,
    admittedReceived: hi,
    abandoned: false,
    lastPollSent: hi - 5,
    tickets: [],
  }
}

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

/** A draw as the edge publishes it, made here with node:crypto: `n` tickets in draw order. */
function syntheticDraw(n: number): PublishedDraw {
  const seed = createHash('sha256').update('sim-test-seed').digest('hex')
  const tickets = Array.from({ length: n }, (_, i) => `t${String(i).padStart(3, '0')}`)
  const value = (t: string) => createHmac('sha256', Buffer.from(seed, 'hex')).update(`demo:${t}`).digest('hex')
  const sorted = tickets
    .map((ticket) => ({ ticket, value: value(ticket) }))
    .sort((a, b) =>
      a.value.slice(0, 10) < b.value.slice(0, 10) ? -1 : a.value.slice(0, 10) > b.value.slice(0, 10) ? 1 : a.ticket < b.ticket ? -1 : 1,
    )
  const commitment = createHash('sha256').update(Buffer.from(seed, 'hex')).digest('hex')
  return { room: 'demo', state: 'drawn', commitment, seed, entrants: n, draw: sorted.map((e, i) => ({ rank: i + 1, ...e })) }
}

describe('scheduled-sale verdicts on synthetic data', () => {
  it('the draw: checked as verify-draw.mjs does; tickets, shown ranks and the admission order against it', () => {
    const d = syntheticDraw(20)
    expect(checkDraw(d)).toEqual([])
    const swapped = structuredClone(d)
    ;[swapped.draw[0]!.ticket, swapped.draw[1]!.ticket] = [swapped.draw[1]!.ticket, swapped.draw[0]!.ticket]
    expect(checkDraw(swapped).length).toBeGreaterThan(0)
    expect(checkDraw({ ...d, commitment: '00'.repeat(32) })).toContain('SHA-256(seed) is not the commitment')
    expect(checkDraw({ ...d, entrants: 21 })).toContain('20 entries listed, 21 in the draw')
    const tickets = d.draw.map((e) => e.ticket)
    // Admitted in rank order, two at a time (same ms: not ordered among themselves).
    const inOrder = d.draw.map((e, i) => [e.ticket, 1000 + Math.floor(i / 2)] as const)
    const ok = { commitmentBefore: d.commitment!, prequeueTickets: tickets, shownRanks: [], admissions: inOrder, opensAt: 1000 }
    expect(drawVerdict(d, ok).ok).toBe(true)
    expect(drawVerdict(d, { ...ok, commitmentBefore: 'ff'.repeat(32) }).ok).toBe(false)
    expect(drawVerdict(d, { ...ok, prequeueTickets: [...tickets, 'x'] }).ok).toBe(false)
    expect(drawVerdict(d, { ...ok, prequeueTickets: tickets.slice(1) }).ok).toBe(false)
    expect(drawVerdict(d, { ...ok, shownRanks: [[d.draw[0]!.ticket, 1]] }).ok).toBe(true)
    expect(drawVerdict(d, { ...ok, shownRanks: [[d.draw[0]!.ticket, 2]] }).ok).toBe(false)
    expect(drawVerdict(d, { ...ok, admissions: [...inOrder.slice(1), [inOrder[0]![0], 999]] }).ok).toBe(false)
    expect(drawVerdict(undefined, ok).ok).toBe(false)
    // Rank 1 admitted after rank 3: one inversion; ties in the same ms are none.
    const ranks = new Map(d.draw.map((e) => [e.ticket, e.rank]))
    const [r1, r2, r3] = d.draw.map((e) => e.ticket)
    expect(
      drawOrderInversions(ranks, [
        [r3!, 5],
        [r2!, 5],
        [r1!, 5],
      ]).count,
    ).toBe(0)
    expect(
      drawOrderInversions(ranks, [
        [r3!, 5],
        [r2!, 6],
        [r1!, 7],
      ]),
    ).toMatchObject({ count: 2, example: [r2, r3] })
    expect(
      drawVerdict(d, {
        ...ok,
        admissions: [
          [r3!, 1005],
          [r1!, 1006],
        ],
      }).ok,
    ).toBe(false)
  })

  it('Spearman ρ: ±1 for monotone data, near 0 for independent data; the verdict fails when rank follows arrival', () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40])).toBeCloseTo(1)
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1])).toBeCloseTo(-1)
    expect(spearman([1, 1, 2, 2], [1, 1, 2, 2])).toBeCloseTo(1)
    const random = rng(3)
    const n = 2000
    const independent = Array.from({ length: n }, (_, i) => ({ joinedAt: i, rank: 0, key: random() }))
      .sort((a, b) => a.key - b.key)
      .map((x, rank) => ({ joinedAt: x.joinedAt, rank: rank + 1 }))
    expect(arrivalRankVerdict(independent).ok).toBe(true)
    expect(arrivalRankVerdict(independent.map((x) => ({ joinedAt: x.joinedAt, rank: x.joinedAt + 1 }))).ok).toBe(false)
    // Early arrivals a little favoured: ranks of the first half drawn from the better 60%.
    const favoured = Array.from({ length: n }, (_, i) => ({ joinedAt: i, rank: (i < n / 2 ? 0 : 0.4 * n) + random() * 0.6 * n }))
    expect(arrivalRankVerdict(favoured).ok).toBe(false)
  })

  it('network cap: more than the cap of certain places in one store minute fails, so does a 429 without Retry-After', () => {
    const join = (network: string, sent: number, place: boolean, extra: Partial<JoinRecord> = {}): JoinRecord => ({
      network,
      bot: true,
      sent,
      received: sent + 50,
      status: place ? 200 : 429,
      place,
      ...(place ? {} : { retryAfter: true }),
      ...extra,
    })
    const three = [join('a', 1000, true), join('a', 2000, true), join('a', 3000, true), join('a', 4000, false), join('b', 4000, true)]
    expect(networkCapVerdict(three, 3).ok).toBe(true)
    expect(networkCapVerdict([...three, join('a', 5000, true)], 3).ok).toBe(false)
    // The next minute is a new window; a join answered across the boundary is in neither for certain.
    expect(networkCapVerdict([...three, join('a', 60_000, true)], 3).ok).toBe(true)
    expect(networkCapVerdict([...three, join('a', 59_990, true)], 3).ok).toBe(true)
    expect(networkCapVerdict([...three, join('a', 6000, false, { retryAfter: false })], 3).ok).toBe(false)
  })

  it('FIFO after the opening: later arrivals in order, and none granted before a pre-queue visitor who kept polling', () => {
    const opensUs = 10_000_000
    // Drawn visitors have arrivals before the opening, later ones after it.
    const drawn = admitted(1, 0, 100, 200, opensUs - 5)
    const late = [admitted(2, 0, 300, 400, opensUs + 1), admitted(3, 0, 500, 600, opensUs + 2)]
    expect(fifoAfterOpeningVerdict([drawn, ...late], opensUs).ok).toBe(true)
    // The drawn one still queued at 700, after a later arrival was admitted at 400.
    expect(fifoAfterOpeningVerdict([admitted(1, 0, 700, 800, opensUs - 5), ...late], opensUs)).toMatchObject({
      ok: false,
      measured: '0 among 2 later arrivals; 2 ahead of the pre-queue',
    })
    expect(fifoAfterOpeningVerdict([drawn, admitted(2, 0, 700, 800, opensUs + 1), late[1]!], opensUs).ok).toBe(false)
  })

  it('scheduled arrivals: a few before the pre-queue, most in it with a spike at its end, a tenth after the opening', () => {
    const t = scheduledArrivalTimes(10_000, 600, 30, rng(1))
    const share = (lo: number, hi: number) => t.filter((x) => x >= lo && x < hi).length / t.length
    expect(share(0, 30)).toBeCloseTo(0.02, 2)
    expect(share(615, 630)).toBeGreaterThan(0.33)
    expect(share(630, Number.POSITIVE_INFINITY)).toBeCloseTo(0.1, 1)
  })
})

describe('what-if model', () => {
  const limits = {
    totalActiveUsers: 10,
    newUsersPerMinute: 6,
    sessionDurationSeconds: 100_000,
    refreshSeconds: 10,
    abandonAfterSeconds: 30,
  }

  it('rate-bound: 20 at opening, 6 a minute (1 per 10 s), 10 slots: one every 10 s until the slots are full', () => {
    // The first admission uses the idle room's second of credit (CATCH_UP_US), so the pace runs from -1 s.
    const p = predict({
      visitors: 20,
      curve: { kind: 'opening', durationSeconds: 0 },
      limits,
      abandonShare: 0,
      patienceSeconds: 0,
      horizonSeconds: 300,
    })
    const grants = p.admitted.flatMap((n, t) => (n > 0 ? [[t, n]] : []))
    expect(grants).toEqual([0, 9, 19, 29, 39, 49, 59, 69, 79, 89].map((t) => [t, 1]))
    expect(p.admittedTotal).toBe(10)
    expect(p.queue[89]).toBe(10)
    expect(p.maxQueue).toBe(19)
    expect(p.drainedAt).toBeUndefined()
    // Waits 0, 9, 19, ..., 89: p50 is the 5th, 39 s.
    expect(p.p50).toBe(39)
    expect(p.p99).toBe(89)
  })

  it('slot-bound: 2 slots, 30-s sessions, 6 visitors: two at 0, 30 and 60 s', () => {
    const p = predict({
      visitors: 6,
      curve: { kind: 'opening', durationSeconds: 0 },
      limits: { ...limits, totalActiveUsers: 2, newUsersPerMinute: 60, sessionDurationSeconds: 30 },
      abandonShare: 0,
      patienceSeconds: 0,
    })
    expect(p.admitted.flatMap((n, t) => (n > 0 ? [[t, n]] : []))).toEqual([
      [0, 2],
      [30, 2],
      [60, 2],
    ])
    expect([p.p50, p.p95, p.drainedAt]).toEqual([30, 60, 60])
    expect(p.waitByArrivalMinute).toEqual([{ minute: 0, meanWait: 30, maxWait: 60 }])
  })

  it('finer steps keep the rules and resolve durations shorter than a second', () => {
    const base = {
      visitors: 20,
      curve: { kind: 'opening', durationSeconds: 0 } as const,
      limits,
      abandonShare: 0,
      patienceSeconds: 0,
      horizonSeconds: 300,
    }
    // The rate-bound sale above, in tenth-second steps: the same grants in the same seconds.
    expect(predict({ ...base, stepSeconds: 0.1 }).admitted).toEqual(predict(base).admitted)
    // 2 slots, 2.5-s sessions: whole-second steps round the session up to 3 s; tenth-second steps do not.
    const short = { ...base, visitors: 6, limits: { ...limits, totalActiveUsers: 2, newUsersPerMinute: 600, sessionDurationSeconds: 2.5 } }
    const grantSeconds = (p: ReturnType<typeof predict>) => p.admitted.flatMap((n, t) => (n > 0 ? [t] : []))
    expect(grantSeconds(predict(short))).toEqual([0, 3, 6])
    expect(grantSeconds(predict({ ...short, stepSeconds: 0.1 }))).toEqual([0, 2, 5])
  })

  it('counts a wait until the page sees the admission: the grant plus a delay spread over one refresh', () => {
    const slotBound = {
      visitors: 6,
      curve: { kind: 'opening', durationSeconds: 0 } as const,
      limits: { ...limits, totalActiveUsers: 2, newUsersPerMinute: 60, sessionDurationSeconds: 30 },
      abandonShare: 0,
      patienceSeconds: 0,
    }
    const plain = predict(slotBound)
    const seen = predict({ ...slotBound, pickupSeconds: 10 })
    // Grants at 0, 30 and 60 s without pickup (mean wait 30). With it, each page sees its admission up
    // to 10 s later (5 on average), and the session runs from then, so the next grants come later too.
    expect(plain.waitByArrivalMinute[0]?.meanWait).toBeCloseTo(30)
    expect(seen.waitByArrivalMinute[0]?.meanWait).toBeGreaterThan(35)
    // The last grant waits for two sessions that each started up to 10 s late, then its own pickup.
    expect(seen.waitByArrivalMinute[0]?.maxWait).toBeLessThanOrEqual(60 + 3 * 10)
    expect(seen.admitted.slice(0, 31).reduce((a, b) => a + b, 0)).toBe(2)
    expect(seen.drainedAt).toBeGreaterThan(plain.drainedAt as number)
    expect(seen.drainedAt).toBeLessThanOrEqual((plain.drainedAt as number) + 2 * 10)
    expect(seen.admittedTotal).toBeCloseTo(6)
  })

  it('givers-up who reach the head after giving up hold a slot only until they are dropped', () => {
    // 2 visitors, 1 slot, long sessions: the first (patient) takes the slot at 0; half of each cohort gives up.
    const p = predict({
      visitors: 2,
      curve: { kind: 'opening', durationSeconds: 0 },
      limits: { ...limits, totalActiveUsers: 1, newUsersPerMinute: 60, sessionDurationSeconds: 1000 },
      abandonShare: 0.5,
      patienceSeconds: 20,
      horizonSeconds: 200,
    })
    // The fluid model admits 1 of 2 at t=0 (half patient, half giver-up, both admitted before giving up).
    expect(p.admitted[0]).toBe(1)
    expect(p.queue[0]).toBe(1)
    // The rest: 0.5 patient waits for a session to end (t=1000, beyond the horizon); 0.5 givers-up are dropped at 20 + 30.
    expect(p.queue[49]).toBeCloseTo(1)
    expect(p.queue[50]).toBeCloseTo(0.5)
  })
})

describe('scaling', () => {
  it('divides durations, multiplies the rate, and honours the edge minimums', () => {
    const s = scaleLimits(
      { totalActiveUsers: 500, newUsersPerMinute: 100, sessionDurationSeconds: 600, refreshSeconds: 30, abandonAfterSeconds: 90 },
      30,
    )
    expect(s.real).toEqual({
      totalActiveUsers: 500,
      newUsersPerMinute: 3000,
      sessionDurationSeconds: 20,
      refreshSeconds: 2,
      abandonAfterSeconds: 5,
    })
    expect(s.effective.refreshSeconds).toBe(60)
    expect(s.notes.some((n) => n.includes('refreshSeconds'))).toBe(true)
    expect(tokenArrival(`q1.demo.abc.${(1234567).toString(36)}.zz.mac`)).toBe(1234567)
  })
})

/** What the CI-sized sales share: the room's limits, 30x compression, and how visitors behave. */
const CI_SALE = {
  limits: {
    totalActiveUsers: 300,
    newUsersPerMinute: 150,
    sessionDurationSeconds: 300,
    refreshSeconds: 60,
    abandonAfterSeconds: 180,
  },
  scale: 30,
  abandonShare: 0.1,
  patienceSeconds: 300,
  buyShare: 0.5,
}

describe('a CI-sized sale', () => {
  for (const runtime of ['node', 'worker'] as const) {
    it(`2,000 visitors on a ramp, 30x compressed, pass every verdict (${runtime} edge)`, { timeout: 300_000 }, async () => {
      const sale = () =>
        simulate({
          ...CI_SALE,
          visitors: 2000,
          curve: { kind: 'ramp', durationSeconds: 300 },
          limits: { ...CI_SALE.limits, totalActiveUsers: 800 },
          seed: 7,
          maxRealSeconds: 90,
          // The Worker runs in workerd (Miniflare) on a redis-server started for the run.
          runtime,
        })
      let r = await sale()
      // Compressed 30 times, the sale's 150 a minute is 75 a second, and the per-second cap (76) leaves
      // the pace 1.3% of slack (3 a second against 2.5 in the real sale). When the shared machine stalls
      // the edge, its polls reach the store in clumps, two clumps in one second share the cap, and the
      // saturated rate can fall short of 0.95 by the cap's own arithmetic (docs/architecture.md, "Paced"):
      // 0.935 in one CI run, 0.85-0.91 here with the cores taken by other processes (both before the pace
      // kept what the cap trims). A run that fails on that verdict alone is said and run once more; the
      // second must pass every verdict.
      const failed = (x: typeof r) => x.verdicts.filter((v) => !v.ok)
      if (failed(r).length > 0 && failed(r).every((v) => v.name === 'saturated admission rate')) {
        console.log(`${runtime} edge, first run: ${failed(r)[0]?.measured}; once more`)
        r = await sale()
      }
      // The report stays in .tmp/ (ignored by git) for a look when this fails.
      mkdirSync('.tmp/sim', { recursive: true })
      writeFileSync(`.tmp/sim/ci-report-${runtime}.html`, renderReport(r))
      expect(
        r.verdicts.filter((v) => !v.ok).map((v) => `${v.name}: ${v.measured} [${v.limit}]`),
        `the edge logged ${JSON.stringify(r.edgeEvents)}`,
      ).toEqual([])
      expect(r.ok).toBe(true)
      // A visitor may be told "busy" (503, they keep their place) when the shared CI machine stalls a
      // Redis call past its 1-s timeout; that is the room's chosen answer, not a broken sale. Anything
      // else, or more than one request in a thousand, fails.
      const kinds = Object.keys(r.errorKinds)
      expect(
        kinds.filter((k) => k !== 'poll 503 busy'),
        JSON.stringify(r.errorKinds),
      ).toEqual([])
      expect(r.errors).toBeLessThanOrEqual(r.requests / 1000)
      expect(r.booking.sold).toBe(r.booking.seats)
      expect(r.samples.length).toBeGreaterThan(10)
      const html = renderReport(r)
      expect(html).toContain('All verdicts pass')
      expect(html).toContain('Time compression <b>30x</b>')
      expect(html).toContain(runtime === 'worker' ? 'Worker in workerd' : 'Node, embedded store')
      expect((html.match(/<svg /g) ?? []).length).toBe(6)
    })
  }
})

describe('a CI-sized sold-out sale', () => {
  for (const runtime of ['node', 'worker'] as const) {
    it(`1,200 visitors for 200 seats, the room linked to the event: told sold out within seconds, nobody admitted after the last sale (${runtime} edge)`, {
      timeout: 120_000,
    }, async () => {
      const r = await simulate({
        visitors: 1200,
        curve: { kind: 'ramp', durationSeconds: 300 },
        ...CI_SALE,
        seed: 7,
        maxRealSeconds: 90,
        seats: 200,
        // The origin keeps the stock in the gate the edge reads: one in this process (node), Redis (worker).
        soldOut: true,
        // Buyers take 1 to 3 real s to pay, and a fifth let their seats go: everything is held for a
        // while, then some comes back, then it is all sold.
        paySeconds: 60,
        releaseShare: 0.2,
        runtime,
      })
      mkdirSync('.tmp/sim', { recursive: true })
      writeFileSync(`.tmp/sim/ci-sold-out-report-${runtime}.html`, renderReport(r))
      expect(
        r.verdicts.filter((v) => !v.ok).map((v) => `${v.name}: ${v.measured} [${v.limit}]`),
        `the edge logged ${JSON.stringify(r.edgeEvents)}`,
      ).toEqual([])
      const names = r.verdicts.filter((v) => !v.info).map((v) => v.name)
      expect(names).toContain('visitors told sold out after the last sale')
      expect(names).toContain('nobody admitted after the last sale')
      expect(r.booking.sold).toBe(r.booking.seats)
      // The sale sold out mid-run: visitors were waiting, told everything was held, then sold out.
      expect(r.visitors.filter((v) => v.soldOutToldAt !== undefined).length).toBeGreaterThan(100)
      expect(r.visitors.some((v) => (v.heldAnswers ?? 0) > 0)).toBe(true)
      expect(r.visitors.some((v) => v.releasedHold)).toBe(true)
      expect(
        Object.keys(r.errorKinds).filter((k) => k !== 'poll 503 busy'),
        JSON.stringify(r.errorKinds),
      ).toEqual([])
      const html = renderReport(r)
      expect(html).toContain('All verdicts pass')
      expect(html).toContain('<h2>Sold out</h2>')
    })
  }
})

describe('a CI-sized Redis loss', () => {
  for (const runtime of ['node', 'worker'] as const) {
    it(`800 visitors, Redis flushed mid-sale with the room full and a line waiting: the line holds (${runtime} edge)`, {
      timeout: 120_000,
    }, async () => {
      const r = await simulate({
        visitors: 800,
        curve: { kind: 'ramp', durationSeconds: 240 },
        ...CI_SALE,
        // Admitted visitors browse about 2 real s, so some are still browsing when Redis forgets them.
        browseSeconds: 60,
        seed: 7,
        maxRealSeconds: 90,
        // At 7 real s: 300 sessions running, some 250 waiting (a redis-server started for the run).
        fault: { kind: 'flush', atSeconds: 210 },
        runtime,
      })
      mkdirSync('.tmp/sim', { recursive: true })
      writeFileSync(`.tmp/sim/ci-loss-report-${runtime}.html`, renderReport(r))
      expect(
        r.verdicts.filter((v) => !v.ok).map((v) => `${v.name}: ${v.measured} [${v.limit}]`),
        `the edge logged ${JSON.stringify(r.edgeEvents)}`,
      ).toEqual([])
      const names = r.verdicts.map((v) => v.name)
      for (const name of [
        'max active sessions',
        'FIFO inversions',
        'places lost',
        'recovery after the flush',
        'worst one-second admission window',
      ])
        expect(names).toContain(name)
      const fault = r.fault as StoreFault
      // The loss happened mid-sale: visitors were waiting, answered recovering, and sessions from before re-registered.
      expect(fault.recovering).toBeDefined()
      expect(r.visitors.some((v) => v.arrivedAt < fault.start && (v.admittedReceived ?? 0) > fault.start)).toBe(true)
      expect(fault.reregistered).toBeGreaterThan(0)
      // As in the sale above: at most a busy answer in a thousand on a stalled machine, nothing else.
      expect(
        Object.keys(r.errorKinds).filter((k) => k !== 'poll 503 busy'),
        JSON.stringify(r.errorKinds),
      ).toEqual([])
      expect(r.errors).toBeLessThanOrEqual(r.requests / 1000)
      const html = renderReport(r)
      expect(html).toContain('All verdicts pass')
      expect(html).toContain('<h2>Store fault</h2>')
    })
  }
})

describe('a CI-sized scheduled sale', () => {
  it('1,500 humans over a 5-min pre-queue with a bot farm on 3 networks, proof of work 8, network cap 10, 30x: every verdict passes (node edge)', {
    timeout: 120_000,
  }, async () => {
    // The booking origin on the PostgreSQL server, not PGlite: PGlite runs in this process, and its
    // statements block the event loop that the edge and the visitors share. On a slow machine the
    // buyers' burst after the opening stalled the edge for seconds, which at 30x is longer than
    // abandonAfter: tokens lapsed and places were lost to the test's own set-up.
    const database = `sim_farm_${process.pid}_${Date.now().toString(36)}`
    const admin = postgresDb(inject('postgresUrl'), { max: 1 })
    await admin.query(`CREATE DATABASE ${database}`)
    const databaseUrl = new URL(inject('postgresUrl'))
    databaseUrl.pathname = `/${database}`
    const r = await simulate({
      databaseUrl: databaseUrl.toString(),
      // Enough humans that |ρ| < 0.1 does not fail by chance: with n independent ranks ρ has a standard
      // deviation of about 1 / √(n − 1): 0.028 for the ~1,300 who got into the pre-queue here.
      visitors: 1500,
      curve: { kind: 'scheduled', durationSeconds: 300 },
      limits: { totalActiveUsers: 1000, newUsersPerMinute: 300, sessionDurationSeconds: 300, refreshSeconds: 60, abandonAfterSeconds: 180 },
      scale: 30,
      abandonShare: 0.1,
      patienceSeconds: 300,
      buyShare: 0.5,
      seed: 11,
      maxRealSeconds: 90,
      bots: { count: 6, networks: 3, places: 30 },
      powDifficulty: 8,
      networkCap: 10,
    }).finally(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.close()
    })
    mkdirSync('.tmp/sim', { recursive: true })
    writeFileSync('.tmp/sim/ci-report-scheduled.html', renderReport(r))
    expect(
      r.verdicts.filter((v) => !v.ok).map((v) => `${v.name}: ${v.measured} [${v.limit}]`),
      `the edge logged ${JSON.stringify(r.edgeEvents)}`,
    ).toEqual([])
    const names = r.verdicts.map((v) => v.name)
    for (const name of [
      'pre-queue order = the verified draw',
      'rank independent of pre-queue arrival',
      'FIFO after the opening',
      'no join above the network cap got a place',
      'FIFO inversions',
      'everyone who kept polling was admitted',
    ])
      expect(names).toContain(name)
    expect(
      Object.keys(r.errorKinds).filter((k) => k !== 'poll 503 busy'),
      JSON.stringify(r.errorKinds),
    ).toEqual([])
    const s = r.scheduled!
    // The draw holds the humans of the pre-queue and the bots' places; the shipped script agreed. (Most
    // of the spike's humans get in before the opening; the proof of work, not compressed, delays some.)
    expect(s.prequeueHumans).toBeGreaterThan(750)
    expect(s.lateHumans).toBeGreaterThan(50)
    expect(s.drawn).toBeGreaterThanOrEqual(s.prequeueHumans)
    expect(r.verdicts.find((v) => v.name === 'pre-queue order = the verified draw')?.measured).toContain('verify-draw.mjs')
    // The farm solved its challenges, hit the cap (429s) and got at most 10 places a network a minute.
    expect(s.bots?.solved).toBeGreaterThan(0)
    expect(s.bots?.refused).toBeGreaterThan(0)
    expect(s.bots!.places).toBeLessThanOrEqual(3 * 10 * 2)
    // Every human solved a challenge and none was refused by the cap (their own networks) when they
    // came. One back after their token lapsed (polls abandonAfter apart) is a newcomer to the edge,
    // and counts against their network again.
    expect(s.humanPow?.solves).toBeGreaterThanOrEqual(1500)
    expect(s.joins.filter((j) => !j.bot && !j.lapsed && j.status === 429)).toEqual([])
    expect(r.booking.sold).toBe(r.booking.seats)
  })
})
