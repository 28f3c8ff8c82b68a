// The presale simulator (sim/presale.ts): its verdicts on synthetic timelines (each must catch its
// violation), then CI-sized presales through real edges on a redis-server: the priority lane on a Node
// edge, the separate lane on the Worker in workerd; every verdict must pass.
import { mkdirSync, writeFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { renderPresaleReport, simulatePresale } from '../sim/presale.js'
import {
  type ActiveSample,
  capVerdict,
  densest,
  type Grant,
  lineInversions,
  priorityFirst,
  rateVerdict,
  redeemedAt,
  usesVerdict,
} from '../sim/presale-verdicts.js'
import { LANE_OFFSET_US } from '../src/core/access.js'

const T = 1_800_000_000_000
/** A grant of `line` arriving at `arrivedMs` (a lane's: redeemed then) and granted at `at`. */
const g = (visitor: string, line: Grant['line'], arrivedMs: number, at: number): Grant => ({
  visitor,
  line,
  arrival: arrivedMs * 1000 - (line === 'public' ? 0 : LANE_OFFSET_US[line]),
  at,
})

describe('presale verdicts on synthetic timelines', () => {
  it('a line out of its arrival order is caught, line by line; ties in a millisecond are one step', () => {
    const grants = [
      g('a', 'public', T, T + 10),
      g('b', 'public', T + 1, T + 5),
      g('c', 'priority', T + 2, T + 1),
      g('d', 'priority', T + 3, T + 1),
    ]
    expect(lineInversions(grants, 'public')).toEqual({ count: 1, example: ['a', 'b'] })
    expect(lineInversions(grants, 'priority').count).toBe(0)
    expect(lineInversions([g('a', 'separate', T, T + 9), g('b', 'separate', T + 1, T + 9)], 'separate').count).toBe(0)
    // A holder who redeemed first but was placed (answered) after the other's grant: not yet in the line then.
    const first = { ...g('a', 'priority', T, T + 50), placedBy: T + 20 }
    expect(lineInversions([first, { ...g('b', 'priority', T + 1, T + 10), placedBy: T + 5 }], 'priority').count).toBe(0)
    expect(lineInversions([first, { ...g('b', 'priority', T + 1, T + 30), placedBy: T + 5 }], 'priority').count).toBe(1)
  })

  it('a public grant while a placed holder waits is caught; one before the holder was placed is not', () => {
    // The holder redeemed at T + 100 and was answered (placed) by T + 103; granted at T + 500.
    const holder = { ...g('h', 'priority', T + 100, T + 500), placedBy: T + 103 }
    expect(redeemedAt(holder)).toBe(T + 100)
    expect(priorityFirst([holder, g('p', 'public', T, T + 102)]).count).toBe(0)
    expect(priorityFirst([holder, g('p', 'public', T, T + 200)])).toEqual({ count: 1, example: ['h', 'p'] })
    // Without an answer's time, the redemption's counts.
    const unplaced = g('u', 'priority', T + 100, T + 500)
    expect(priorityFirst([unplaced, g('p', 'public', T, T + 101)]).count).toBe(1)
    // Granted in the same millisecond as the public visitor: one step of the rule, the holder first in it.
    expect(priorityFirst([holder, g('p', 'public', T, T + 500)]).count).toBe(0)
  })

  it('rates: a second or a minute over the line’s own is caught; the room counts the priority lane with the public', () => {
    const room = [...Array.from({ length: 4 }, (_, i) => g(`p${i}`, 'public', T, T + i * 100)), g('r', 'priority', T, T + 450)]
    expect(densest(room, 'room', 1000)).toBe(5)
    expect(rateVerdict(room, 'room', 240).ok).toBe(true) // 5 a second allowed
    expect(rateVerdict(room, 'room', 180).ok).toBe(false) // 4 a second allowed
    expect(rateVerdict(room, 'separate', 60).ok).toBe(true)
    const lane = Array.from({ length: 70 }, (_, i) => g(`s${i}`, 'separate', T, T + i * 800))
    expect(rateVerdict(lane, 'separate', 60).ok).toBe(false) // 75 in a minute, at most 62
  })

  it('caps and uses: one sample over a cap is caught, and so is a code used past its uses or refused before', () => {
    const samples: ActiveSample[] = [
      { t: 1, line: 'room', active: 10 },
      { t: 2, line: 'separate', active: 4 },
      { t: 3, line: 'separate', active: 5 },
    ]
    expect(capVerdict(samples, 'room', 10).ok).toBe(true)
    expect(capVerdict(samples, 'separate', 4).ok).toBe(false)
    expect(capVerdict([], 'room', 10).ok).toBe(false)
    expect(usesVerdict([{ label: 'x', maxUses: 3, redeemed: 3, refusedUsedUp: 2 }]).ok).toBe(true)
    expect(usesVerdict([{ label: 'x', maxUses: 3, redeemed: 4, refusedUsedUp: 0 }]).ok).toBe(false)
    expect(usesVerdict([{ label: 'x', maxUses: 3, redeemed: 2, refusedUsedUp: 1 }]).ok).toBe(false)
  })
})

describe('a presale through a real edge', () => {
  const sale = {
    visitors: 50,
    holders: 14,
    linkUses: 6,
    linkExtra: 3,
    limits: { totalActiveUsers: 25, newUsersPerMinute: 60, sessionDurationSeconds: 300, refreshSeconds: 60, abandonAfterSeconds: 180 },
    laneActiveUsers: 8,
    laneUsersPerMinute: 20,
    durationSeconds: 60,
    scale: 30,
    seed: 5,
    maxRealSeconds: 120,
  }
  it.each([
    ['priority', 'node'],
    ['separate', 'worker'],
  ] as const)('the %s lane on the %s edge: every verdict passes', async (lane, runtime) => {
    const r = await simulatePresale({ ...sale, lane, runtime })
    mkdirSync('.tmp/sim', { recursive: true })
    writeFileSync(`.tmp/sim/ci-presale-${lane}-${runtime}.html`, renderPresaleReport(r))
    expect(r.verdicts.filter((v) => !v.ok).map((v) => `${v.name}: ${v.measured} [${v.limit}] ${v.detail}`)).toEqual([])
    const names = r.verdicts.map((v) => v.name)
    expect(names).toContain(
      lane === 'priority' ? 'the priority lane admitted before the public line' : 'the separate lane never above its cap',
    )
    // The sale had something to prove: a line, and every holder of the lane through it.
    expect(r.grants.filter((x) => x.line === lane).length).toBe(sale.holders + sale.linkUses)
    expect(r.uses.at(-1)).toMatchObject({ maxUses: sale.linkUses, redeemed: sale.linkUses, refusedUsedUp: sale.linkExtra })
    expect(r.admitted).toBe(sale.visitors + sale.holders + sale.linkUses + sale.linkExtra)
  })
})
