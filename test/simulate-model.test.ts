// The sale simulator on synthetic data: the scheduled sale's verdicts (the draw, rank against arrival, the network cap), the what-if model on cases small enough to work out by hand, and scaling.
import { createHash, createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { predict } from '../sim/predict.js'
import { rng, scaleLimits, scheduledArrivalTimes, tokenArrival } from '../sim/simulate.js'
import {
  arrivalRankVerdict,
  checkDraw,
  drawOrderInversions,
  drawVerdict,
  fifoAfterOpeningVerdict,
  type JoinRecord,
  networkCapVerdict,
  type PublishedDraw,
  spearman,
} from '../sim/verdicts.js'
import { admitted } from './support/sim-visitor.js'

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
