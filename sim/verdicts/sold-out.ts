// A room linked to its event: where the gate's counts say it sold out, visitors told so, and nobody
// admitted after the last sale.
import { percentile } from '../../scripts/lib/stats.js'
import { type AdmissionRecord, grantInterval, type Verdict, type VisitorRecord } from './records.js'

/**
 * The event's stock as the simulator read it from the claim gate, the counts every edge reads once a
 * second (ClaimGate.counts), every 250 ms: real ms, and the counts (absent: the gate knew nothing of
 * the event, or could not be read).
 */
export interface GateSample {
  t: number
  free?: number
  held?: number
  sold?: number
}

/**
 * Where the gate's counts say the event ran out, from its samples: `nothingFreeAt`, the first sample of
 * the stretch with nothing free that lasts to the end of the run (the last unit claimed); `soldOutAt`,
 * the first of the stretch with nothing held either (everything sold). Undefined when the event still
 * had something free at the end (or the gate never counted it).
 */
export function sellOut(gate: readonly GateSample[]): { nothingFreeAt: number; soldOutAt?: number } | undefined {
  const known = gate.filter((g) => g.free !== undefined)
  let i = known.length
  while (i > 0 && known[i - 1]!.free! <= 0) i--
  if (i === known.length) return undefined
  let j = known.length
  while (j > i && (known[j - 1]!.held ?? 0) <= 0) j--
  return { nothingFreeAt: known[i]!.t, soldOutAt: j < known.length ? known[j]!.t : undefined }
}

/**
 * Stretches in which the gate said nothing was free, widened by how late an edge can see a change (a
 * reload, plus a margin, and a sample interval before the first sample that saw it): the rate verdict
 * leaves them out (nobody is let in then, by design).
 */
export function nothingFreeStretches(gate: readonly GateSample[], reloadMs: number, sampleMs: number): [number, number][] {
  const out: [number, number][] = []
  let start: number | undefined
  for (const g of gate) {
    if (g.free === undefined) continue
    if (g.free <= 0) start ??= g.t
    else if (start !== undefined) {
      out.push([start - sampleMs, g.t + reloadMs + 500])
      start = undefined
    }
  }
  if (start !== undefined) out.push([start - sampleMs, Number.POSITIVE_INFINITY])
  return out
}

export interface SoldOutInput {
  gate: readonly GateSample[]
  /** When the answer to the last confirmed purchase came back (visitor side), if any. */
  lastSaleAt?: number
  /** The store's record of its admissions, real ms (exact), if it could be read. */
  record?: AdmissionRecord
  /** How often each edge reads the counts (RoomDirectory: 1 s). */
  reloadMs: number
  /** The refresh the edge was given, real ms: a visitor's next poll comes within 1.5 of it (their phase). */
  refreshMs: number
}

const noCounts = (gate: readonly GateSample[]) => gate.every((g) => g.free === undefined)
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/**
 * Visitors told "sold out" within seconds of the last sale. Measured from the last sale (the answer to
 * the last confirm; without one, the gate's first sold-out count): a visitor waiting then must be told
 * (state sold_out) by the time one look of the edge at the counts (a reload) and their next poll (within
 * 1.5 refreshes, at their phase) have passed, plus half a second; a visitor who comes later, on their
 * first answer (within a second of their first request) once that bound has passed.
 */
export function soldOutToldVerdict(visitors: readonly VisitorRecord[], o: SoldOutInput): Verdict {
  const name = 'visitors told sold out after the last sale'
  const boundMs = o.reloadMs + 1.5 * o.refreshMs + 500
  const limit = `those waiting told within a reload + 1.5 refreshes + 0.5 s = ${secs(boundMs)} real; later ones on their first answer`
  const detail =
    'Every visitor who kept polling past their deadline must have been answered state "sold_out" by it (told visitors leave): the last sale (the answer to the last confirm, else the gate\'s first sold-out count) + the bound for those who came before it, else the later of that and their first request + 1 s. Delays from the last sale, or from a later first request.'
  if (noCounts(o.gate)) return { name, ok: false, measured: 'the gate published no counts for the event', limit, detail }
  const out = sellOut(o.gate)
  if (out?.soldOutAt === undefined) {
    const last = o.gate.filter((g) => g.free !== undefined).at(-1)
    return {
      name,
      ok: true,
      info: true,
      measured: `not measured: the event did not sell out (the gate's last count: ${last?.free} free, ${last?.held} held, ${last?.sold} sold)`,
      limit,
      detail,
    }
  }
  const t = o.lastSaleAt ?? out.soldOutAt
  const deadline = (v: VisitorRecord) => Math.max(t + boundMs, v.arrivedAt + 1000)
  const late = visitors.filter(
    (v) =>
      v.admittedReceived === undefined &&
      (v.soldOutToldAt ?? Number.POSITIVE_INFINITY) > deadline(v) &&
      (v.lastPollSent ?? 0) > deadline(v),
  )
  const told = visitors.filter((v) => v.soldOutToldAt !== undefined)
  const delays = (list: VisitorRecord[]) => list.map((v) => Math.max(0, v.soldOutToldAt! - Math.max(t, v.arrivedAt))).sort((a, b) => a - b)
  const before = delays(told.filter((v) => v.arrivedAt <= t))
  const after = delays(told.filter((v) => v.arrivedAt > t))
  const spread = (d: number[]) => (d.length === 0 ? '' : `: p50 ${secs(percentile(d, 50))}, max ${secs(d.at(-1)!)}`)
  return {
    name,
    ok: told.length > 0 && late.length === 0,
    measured:
      told.length === 0
        ? 'nobody was told sold out'
        : `${before.length} waiting at the last sale told${spread(before)}; ${after.length} who came later${spread(after)}; ${late.length} polling past their deadline untold`,
    limit,
    detail,
  }
}

/**
 * Nobody admitted after the last sale, from the store's record of its grants (exact, on its own
 * clock). The last unit is claimed before the last sale (its buyer holds it, then pays); from the
 * claim on nothing is free, and an edge stops granting at its next look at the counts (its rooms'
 * reload, once a second, plus the time a look takes). So also: no grant later than the gate's first
 * nothing-free count + two reloads + 0.5 s, whatever the time buyers take to pay.
 */
export function noAdmissionAfterVerdict(visitors: readonly VisitorRecord[], o: SoldOutInput): Verdict {
  const name = 'nobody admitted after the last sale'
  const limit = `0 grants after the last sale, and 0 later than the first nothing-free count + two reloads + 0.5 s (${secs(2 * o.reloadMs + 500)})`
  const detail =
    "The store's record of its grants, else the visitor side (grants certainly after). Nothing free: the last unit claimed, held or sold from then on. Grants between that count and the last sale are the edge seeing it a reload late; a buyer who pays within a reload could be followed by some."
  if (noCounts(o.gate)) return { name, ok: false, measured: 'the gate published no counts for the event', limit, detail }
  const out = sellOut(o.gate)
  if (out === undefined) return { name, ok: true, info: true, measured: 'not measured: the event did not sell out', limit, detail }
  // An edge's look at the counts is at most a reload period old, plus the time the look itself takes
  // (on a loaded machine up to about as long again).
  const bound = out.nothingFreeAt + 2 * o.reloadMs + 500
  const grants = o.record ?? visitors.filter((v) => v.admittedReceived !== undefined).map((v) => grantInterval(v as VisitorRecord)![0])
  const afterBound = grants.filter((g) => g > bound).length
  const afterSale = o.lastSaleAt === undefined ? 0 : grants.filter((g) => g > o.lastSaleAt!).length
  const last = grants.length === 0 ? undefined : Math.max(...grants)
  return {
    name,
    ok: afterSale === 0 && afterBound === 0,
    measured:
      `${afterSale} after the last sale, ${afterBound} after the bound; the last grant ` +
      (last === undefined ? 'none' : `${secs(last - out.nothingFreeAt)} after nothing was free`) +
      (o.lastSaleAt === undefined ? '' : `, the last sale ${secs(o.lastSaleAt - out.nothingFreeAt)} after it`) +
      ` (${o.record ? 'store record' : 'visitor side'})`,
    limit,
    detail,
  }
}
