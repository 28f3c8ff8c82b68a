// The presale sale's verdicts (sim/presale.ts), as pure functions over what the store recorded: each
// visitor's line (the public line, the priority lane, the separate lane), their arrival in it (the
// queue token's) and when the store granted them (its admission record), the store's active counts,
// and the redemptions the visitors saw. test/presale.test.ts gives each a timeline it must catch.
import { LANE_OFFSET_US, type Lane } from '../src/core/access.js'
import type { Verdict } from './verdicts.js'

export type Line = Lane | 'public'

/** A visitor the store granted: their line, their arrival (µs, store clock), and the grant (ms, store clock). */
export interface Grant {
  visitor: string
  line: Line
  arrival: number
  at: number
  /**
   * A lane's holder: when they had their answer to the request that redeemed the code (ms, the wall
   * clock, which Redis TIME is on this host): by then the poll that followed the redemption had
   * placed them. The redemption and that poll are two store calls, a few ms apart.
   */
  placedBy?: number
}

/** The store's active count of a line, sampled (ms on the run's clock). */
export interface ActiveSample {
  t: number
  line: 'room' | 'separate'
  active: number
}

/** What one access code or link was tried for: how many redemptions it had and how many it may have. */
export interface Uses {
  label: string
  maxUses: number
  redeemed: number
  refusedUsedUp: number
}

/** When a lane's place was redeemed, ms: its arrival less the lane's offset. */
export function redeemedAt(g: Grant): number {
  return g.line === 'public' ? g.arrival / 1000 : (g.arrival + LANE_OFFSET_US[g.line]) / 1000
}

/** When a place was in the line: a lane's once its redemption was answered (placedBy), a public one at its arrival. */
const placed = (g: Grant) => g.placedBy ?? redeemedAt(g)

/**
 * Grants of one line out of arrival order: pairs where an earlier arrival was granted later, though it
 * was already placed when the later one was granted. Every visitor of the presale polls until admitted,
 * so none may leave the line: FIFO holds strictly among the places in it. (A lane's arrival is given at
 * its redemption and taken by the poll right after it: a holder who redeemed first and polled second
 * was not yet in the line between the two.)
 */
export function lineInversions(grants: readonly Grant[], line: Line): { count: number; example?: [string, string] } {
  const mine = grants.filter((g) => g.line === line).sort((a, b) => a.arrival - b.arrival)
  let count = 0
  let example: [string, string] | undefined
  for (let j = 0; j < mine.length; j++) {
    const later = mine[j] as Grant
    for (let i = 0; i < j; i++) {
      const earlier = mine[i] as Grant
      if (earlier.at > later.at && placed(earlier) < later.at) {
        count++
        example ??= [earlier.visitor, later.visitor]
        break
      }
    }
  }
  return { count, example }
}

export function orderVerdict(grants: readonly Grant[], line: Line): Verdict {
  const { count, example } = lineInversions(grants, line)
  const n = grants.filter((g) => g.line === line).length
  return {
    name: `${line === 'public' ? 'the public line' : `the ${line} lane`} in its own arrival order`,
    ok: count === 0,
    measured: `${count} of ${n} granted out of order`,
    limit: '0',
    detail: example === undefined ? '' : `${example[1]} was granted before ${example[0]}, who arrived first`,
  }
}

/**
 * The priority lane before the public line: a public grant while a priority holder who was placed
 * before it still waited is a violation (a grant in the same millisecond is one step of the rule). A
 * holder counts as placed when the answer to their redemption came (placedBy), or else at the
 * redemption itself.
 */
export function priorityFirst(grants: readonly Grant[]): { count: number; example?: [string, string] } {
  const holders = grants.filter((g) => g.line === 'priority')
  let count = 0
  let example: [string, string] | undefined
  for (const q of grants) {
    if (q.line !== 'public') continue
    for (const p of holders) {
      if (placed(p) < q.at && p.at > q.at) {
        count++
        example ??= [p.visitor, q.visitor]
      }
    }
  }
  return { count, example }
}

export function priorityFirstVerdict(grants: readonly Grant[]): Verdict {
  const { count, example } = priorityFirst(grants)
  return {
    name: 'the priority lane admitted before the public line',
    ok: count === 0,
    measured: `${count} public grants while a holder placed earlier waited`,
    limit: '0',
    detail: example === undefined ? '' : `${example[1]} (public) was granted before ${example[0]} (priority)`,
  }
}

/** The most grants of a line in any window of `ms` (store clock). */
export function densest(grants: readonly Grant[], line: Line | 'room', ms: number): number {
  const times = grants
    .filter((g) => (line === 'room' ? g.line !== 'separate' : g.line === line))
    .map((g) => g.at)
    .sort((a, b) => a - b)
  let most = 0
  let from = 0
  for (let i = 0; i < times.length; i++) {
    while ((times[from] as number) <= (times[i] as number) - ms) from++
    most = Math.max(most, i - from + 1)
  }
  return most
}

/** A line's grants at its rate: per second the share plus one, per minute the rate plus a second's catch-up. */
export function rateVerdict(grants: readonly Grant[], line: 'room' | 'separate', perMinute: number): Verdict {
  const perSecond = Math.floor(perMinute / 60) + 1
  const second = densest(grants, line, 1000)
  const minute = densest(grants, line, 60_000)
  return {
    name: `${line === 'room' ? 'the room' : 'the separate lane'} at its own rate`,
    ok: second <= perSecond && minute <= perMinute + perSecond,
    measured: `at most ${second} in a second, ${minute} in a minute (real time)`,
    limit: `≤ ${perSecond} a second, ≤ ${perMinute + perSecond} a minute`,
    detail: '',
  }
}

/** A line's active sessions never above its cap, as the store counted them. */
export function capVerdict(samples: readonly ActiveSample[], line: 'room' | 'separate', cap: number): Verdict {
  const mine = samples.filter((s) => s.line === line)
  const most = Math.max(0, ...mine.map((s) => s.active))
  return {
    name: `${line === 'room' ? 'the room' : 'the separate lane'} never above its cap`,
    ok: most <= cap && mine.length > 0,
    measured: `at most ${most} active in ${mine.length} samples`,
    limit: `≤ ${cap}`,
    detail: '',
  }
}

/** No code or link was redeemed more often than it may be; a link tried by more than its uses was used up exactly. */
export function usesVerdict(uses: readonly Uses[]): Verdict {
  const over = uses.filter((u) => u.redeemed > u.maxUses)
  const short = uses.filter((u) => u.refusedUsedUp > 0 && u.redeemed < u.maxUses)
  return {
    name: 'uses never exceed a code’s or a link’s',
    ok: over.length === 0 && short.length === 0,
    measured: `${uses.reduce((n, u) => n + u.redeemed, 0)} redemptions of ${uses.length} codes and links; ${over.length} over, ${short.length} refused before used up`,
    limit: '0 over, 0 refused early',
    detail: [...over, ...short].map((u) => `${u.label}: ${u.redeemed} of ${u.maxUses}`).join('; '),
  }
}

/** Everyone of the sale was admitted by its end. */
export function everyoneAdmittedVerdict(admitted: number, visitors: number): Verdict {
  return {
    name: 'everyone admitted',
    ok: admitted === visitors,
    measured: `${admitted} of ${visitors}`,
    limit: 'all',
    detail: '',
  }
}
