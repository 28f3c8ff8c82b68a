// Order and places: FIFO inversions (before and after a store fault apart), places lost, and the slots
// held by visitors who gave up.
import { grantInterval, type StoreFault, type StoreSample, type Verdict, type VisitorRecord } from './records.js'

/**
 * FIFO inversions: pairs (a, b) where a arrived before b on the server's clock, a never gave up, and a
 * was certainly granted after b: a's grant interval starts after b's ends. Pick-up order is not
 * compared (a visitor granted while between polls collects at the next poll, up to one poll interval
 * later), only what the grant intervals prove.
 *
 * With a store fault, the store's memory before it and after it are compared apart: a visitor granted
 * just before a loss who had not collected it is granted again after it (the store forgot), and being
 * collected after later arrivals who were granted before the loss is no inversion; but within each
 * side, everyone who kept polling must be granted in arrival order. Before: the polls sent and answered
 * before the fault began; after: those sent once the store answered again.
 */
export function fifoInversions(
  visitors: VisitorRecord[],
  abandonAfterMs = Number.POSITIVE_INFINITY,
  fault?: Pick<StoreFault, 'start' | 'end'>,
): { count: number; example?: [number, number] } {
  // A visitor whose polls were ever abandonAfter apart was (rightly) dropped and rejoined at the back.
  const kept = visitors
    .filter((v) => !v.abandoned && v.serverArrival !== undefined && (v.maxGapMs ?? 0) < abandonAfterMs)
    .sort((a, b) => a.serverArrival! - b.serverArrival!)
  const sides: Interval[][] = []
  if (fault === undefined) {
    sides.push(
      kept.filter((v) => v.admittedReceived !== undefined).map((v) => ({ id: v.id, lo: grantInterval(v)![0], hi: v.admittedReceived! })),
    )
  } else {
    const before: Interval[] = []
    const after: Interval[] = []
    for (const v of kept) {
      const admitted = v.admittedReceived !== undefined && v.admittedSent !== undefined
      if (admitted && v.admittedReceived! < fault.start) before.push({ id: v.id, lo: grantInterval(v)![0], hi: v.admittedReceived! })
      else if (v.lastQueuedBeforeFault !== undefined) before.push({ id: v.id, lo: v.lastQueuedBeforeFault, hi: undefined })
      if (admitted && v.admittedSent! > fault.end) after.push({ id: v.id, lo: v.lastQueuedAfterFault, hi: v.admittedReceived! })
    }
    sides.push(before, after)
  }
  let count = 0
  let example: [number, number] | undefined
  for (const side of sides) {
    const r = countInversions(side)
    count += r.count
    example ??= r.example
  }
  return { count, example }
}

/** A visitor's grant on one side of a fault: after `lo` (undefined: unknown) and by `hi` (undefined: not on this side). */
interface Interval {
  id: number
  lo: number | undefined
  hi: number | undefined
}

/** Pairs i < j (arrival order) with lo(i) > hi(j). O(n^2) with a cheap early exit on a running max. */
function countInversions(items: Interval[]): { count: number; example?: [number, number] } {
  let count = 0
  let example: [number, number] | undefined
  let maxLo = Number.NEGATIVE_INFINITY
  for (let j = 0; j < items.length; j++) {
    const hiB = items[j]!.hi
    if (hiB !== undefined && maxLo > hiB) {
      for (let i = 0; i < j; i++) {
        const lo = items[i]!.lo
        if (lo !== undefined && lo > hiB) {
          count++
          example ??= [items[i]!.id, items[j]!.id]
        }
      }
    }
    maxLo = Math.max(maxLo, items[j]!.lo ?? Number.NEGATIVE_INFINITY)
  }
  return { count, example }
}

export function fifoVerdict(visitors: VisitorRecord[], abandonAfterMs = Number.POSITIVE_INFINITY, fault?: StoreFault): Verdict {
  const r = fifoInversions(visitors, abandonAfterMs, fault)
  const lapsed = visitors.filter((v) => !v.abandoned && (v.maxGapMs ?? 0) >= abandonAfterMs).length
  return {
    name: 'FIFO inversions',
    ok: r.count === 0,
    measured: String(r.count) + (r.example ? ` (e.g. visitor ${r.example[0]} granted after ${r.example[1]})` : ''),
    limit: '0',
    detail:
      'Pairs where an earlier arrival who kept polling was certainly granted after a later one (grant order, not pick-up order).' +
      (fault ? ` Before the ${fault.kind} and after it apart: the store's memory of each side.` : '') +
      (lapsed > 0 ? ` ${lapsed} visitors whose polls were abandonAfter apart are not counted.` : ''),
  }
}

/**
 * Places lost: visitors who kept polling (never abandonAfter apart) and yet were not admitted by the
 * end, or whose queue token came back with a later arrival (sent to the back of the line).
 */
export function placesVerdict(visitors: VisitorRecord[], abandonAfterMs: number, fault?: StoreFault): Verdict {
  const kept = visitors.filter((v) => !v.abandoned && (v.maxGapMs ?? 0) < abandonAfterMs)
  const back = kept.filter((v) => (v.movedBack ?? 0) > 0)
  const stuck = kept.filter((v) => v.admittedReceived === undefined)
  const inLine = fault
    ? kept.filter((v) => v.arrivedAt < fault.start && (v.admittedReceived === undefined || v.admittedReceived > fault.start)).length
    : undefined
  return {
    name: 'places lost',
    ok: back.length + stuck.length === 0,
    measured:
      `${back.length + stuck.length} (${back.length} sent back, ${stuck.length} never admitted)` +
      (back[0]?.movedBackFirst
        ? ` (e.g. moved back by ${(back[0].movedBackFirst.byMs / 1000).toFixed(2)} s at ${(back[0].movedBackFirst.at / 1000).toFixed(1)} s, ${(back[0].movedBackFirst.gapMs / 1000).toFixed(2)} s after its last answer)`
        : '') +
      (inLine !== undefined ? ` of ${inLine} in line at the ${fault?.kind}` : ''),
    limit: '0',
    detail:
      'Visitors who kept polling: the arrival in their queue token must never move later (a place restored at the signed arrival), ' +
      'and every one of them must be admitted in the end.',
  }
}

/**
 * Places kept, in a sale without a store fault: no visitor who kept polling (never abandonAfter apart,
 * as they sent their polls) may see the arrival in their queue token move later. An edge that reads
 * polls late must not count its own delay as the visitor's silence (core/lateness.ts).
 */
export function placesKeptVerdict(visitors: VisitorRecord[], abandonAfterMs: number): Verdict {
  const back = visitors.filter((v) => !v.abandoned && (v.maxGapMs ?? 0) < abandonAfterMs && (v.movedBack ?? 0) > 0)
  const first = back[0]?.movedBackFirst
  const lapsed = back.filter((v) => (v.lapsedTokens ?? 0) > 0).length
  return {
    name: 'places kept',
    ok: back.length === 0,
    measured:
      `${back.length} sent back` +
      (first
        ? ` (e.g. by ${(first.byMs / 1000).toFixed(2)} s at ${(first.at / 1000).toFixed(1)} s, ${(first.gapMs / 1000).toFixed(2)} s after its last answer; ${lapsed} of them with a token past its expiry when answered)`
        : ''),
    limit: '0',
    detail:
      'Visitors who kept polling: the arrival in their queue token must never move later, even when the edge reads their poll after the token expired (a late edge).',
  }
}

/**
 * Slots held by abandoned visitors. A visitor who gave up is still granted if they reach the head before
 * the store drops them (abandonAfter after their last poll); nobody collects the admission and the slot
 * must come back abandonAfter after that last poll. Held: gave up, and a later arrival was certainly
 * granted before the giver-up's drop time. Check: at each store sample, the active count must not exceed
 * the sessions possibly running plus the held slots still allowed (last poll + abandonAfter + slack).
 */
export function abandonedSlots(
  visitors: VisitorRecord[],
  samples: StoreSample[],
  o: { sessionMs: number; abandonAfterMs: number; slackMs: number; fault?: Pick<StoreFault, 'start' | 'end'> },
): { held: number; worstExcess: number; at?: number } {
  const granted = visitors
    .filter((v) => v.serverArrival !== undefined && v.admittedReceived !== undefined)
    .map((v) => ({ arrival: v.serverArrival!, hi: v.admittedReceived! }))
  const heldBy: VisitorRecord[] = []
  for (const v of visitors) {
    if (!v.abandoned || v.serverArrival === undefined || v.lastPollSent === undefined) continue
    const dropAt = v.lastPollSent + o.abandonAfterMs
    if (granted.some((g) => g.arrival > v.serverArrival! && g.hi < dropAt)) heldBy.push(v)
  }
  let worstExcess = Number.NEGATIVE_INFINITY
  let at: number | undefined
  for (const s of samples) {
    let possible = 0
    // Before a fault's end, a visitor admitted after it may have been granted before it (then forgotten).
    const beforeEnd = o.fault !== undefined && s.t - o.slackMs <= o.fault.end
    for (const v of visitors) {
      if (v.admittedSent === undefined || v.admittedReceived === undefined) continue
      const lo = beforeEnd && v.lastQueuedBeforeFault !== undefined ? v.lastQueuedBeforeFault : (v.lastQueuedSent ?? v.arrivedAt)
      const end = Math.max(v.admittedReceived, v.lastActivityReceived ?? 0) + o.sessionMs
      if (s.t + o.slackMs >= lo && s.t - o.slackMs <= end) possible++
    }
    // Any abandoned visitor may hold a slot until their drop time (a grant we could not see): abandonAfter
    // after the store saw their last poll, which it did before the answer came back.
    for (const v of visitors) {
      if (!v.abandoned || v.lastPollSent === undefined) continue
      const lastSeen = v.lastPollReceived ?? v.lastPollSent
      if (s.t - o.slackMs <= lastSeen + o.abandonAfterMs && s.t + o.slackMs >= v.arrivedAt) possible++
    }
    const excess = s.active - possible
    if (excess > worstExcess) {
      worstExcess = excess
      at = s.t
    }
  }
  return { held: heldBy.length, worstExcess: samples.length === 0 ? 0 : worstExcess, at }
}

export function abandonedVerdict(
  visitors: VisitorRecord[],
  samples: StoreSample[],
  o: { sessionMs: number; abandonAfterMs: number; slackMs: number; fault?: Pick<StoreFault, 'start' | 'end'> },
): Verdict {
  const r = abandonedSlots(visitors, samples, o)
  return {
    name: 'slots held by abandoned visitors',
    ok: r.worstExcess <= 0,
    measured: `${r.held} held; store active minus possible holders at worst ${r.worstExcess}${r.at !== undefined ? ` at ${(r.at / 1000).toFixed(1)} s` : ''}`,
    limit: `slots back within abandonAfter (${o.abandonAfterMs / 1000} s real) of the last poll`,
    detail:
      'Held: gave up, yet a later arrival was granted before their drop time. Excess > 0: more slots taken than sessions possibly running ' +
      '(admission to last request + session, renewals included) plus givers-up within abandonAfter of their last poll.',
  }
}
