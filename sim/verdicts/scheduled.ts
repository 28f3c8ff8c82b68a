// A scheduled sale (issue #13 §5): the pre-queue's draw, the arrival-rank independence, the network cap,
// and FIFO after the opening.
import { createHash, createHmac } from 'node:crypto'
import { fifoInversions } from './fifo.js'
import type { Verdict, VisitorRecord } from './records.js'

/** GET /_anteroom/draw after the opening, all pages in one list. */
export interface PublishedDraw {
  room: string
  state: string
  commitment: string | null
  seed?: string
  entrants?: number
  draw: { rank: number; ticket: string; value: string }[]
}

/** The checks of scripts/verify-draw.mjs (node:crypto only): the problems found, none when the draw checks out. */
export function checkDraw(d: PublishedDraw): string[] {
  if (d.state !== 'drawn' || typeof d.seed !== 'string') return [`no seed (state ${d.state})`]
  const problems: string[] = []
  const seed = Buffer.from(d.seed, 'hex')
  if (createHash('sha256').update(seed).digest('hex') !== d.commitment) problems.push('SHA-256(seed) is not the commitment')
  d.draw.forEach((e, i) => {
    const value = createHmac('sha256', seed).update(`${d.room}:${e.ticket}`).digest('hex')
    if (value !== e.value) problems.push(`rank ${e.rank}: the value of ${e.ticket} is not ${e.value}`)
    if (e.rank !== i + 1) problems.push(`entry ${i + 1} has rank ${e.rank}`)
    const before = d.draw[i - 1]
    if (before !== undefined) {
      const [a, b] = [before.value.slice(0, 10), e.value.slice(0, 10)]
      if (a > b || (a === b && before.ticket >= e.ticket)) problems.push(`rank ${e.rank} should come before rank ${before.rank}`)
    }
  })
  if (d.draw.length !== d.entrants) problems.push(`${d.draw.length} entries listed, ${d.entrants} in the draw`)
  return problems
}

/**
 * Drawn visitors the store admitted (strictly) after one ranked later in the draw: the store's record
 * (ticket, admission ms) against the draw's ranks. Admissions in the same ms are not ordered.
 */
export function drawOrderInversions(
  ranks: ReadonlyMap<string, number>,
  admissions: readonly (readonly [string, number])[],
): { count: number; compared: number; example?: [string, string] } {
  const drawn = admissions.filter(([t]) => ranks.has(t)).sort((a, b) => a[1] - b[1])
  let count = 0
  let example: [string, string] | undefined
  let worst: string | undefined
  let worstRank = Number.NEGATIVE_INFINITY
  for (let i = 0; i < drawn.length; ) {
    let j = i
    while (j < drawn.length && drawn[j]![1] === drawn[i]![1]) j++
    for (let k = i; k < j; k++) {
      const [t] = drawn[k]!
      if (ranks.get(t)! < worstRank) {
        count++
        example ??= [t, worst!]
      }
    }
    for (let k = i; k < j; k++) {
      const [t] = drawn[k]!
      if (ranks.get(t)! > worstRank) [worstRank, worst] = [ranks.get(t)!, t]
    }
    i = j
  }
  return { count, compared: drawn.length, example }
}

/** What the simulator saw of a scheduled sale's draw, beside what the edge published. */
export interface DrawObservation {
  /** The commitment published during the pre-queue. */
  commitmentBefore?: string
  /** Every ticket answered "prequeue" (humans and bot places). */
  prequeueTickets: readonly string[]
  /** The ranks visitors were shown after the opening (status draw.rank): [ticket, rank]. */
  shownRanks: readonly (readonly [string, number])[]
  /** The store's record of its admissions: [ticket, ms], the store's clock; and the opening on it. */
  admissions: readonly (readonly [string, number])[]
  opensAt: number
  /** scripts/verify-draw.mjs run on the saved draw. */
  script?: { ok: boolean; output: string }
}

export function drawVerdict(d: PublishedDraw | undefined, o: DrawObservation): Verdict {
  const name = 'pre-queue order = the verified draw'
  const limit = 'checks out; 0 out of order'
  if (d === undefined) return { name, ok: false, measured: 'no draw published', limit, detail: 'GET /_anteroom/draw gave no draw.' }
  const problems = checkDraw(d)
  if (o.commitmentBefore !== undefined && o.commitmentBefore !== d.commitment) problems.push('the commitment changed at the opening')
  const ranks = new Map(d.draw.map((e) => [e.ticket, e.rank]))
  const seen = new Set(o.prequeueTickets)
  const missing = [...seen].filter((t) => !ranks.has(t)).length
  const extra = d.draw.filter((e) => !seen.has(e.ticket)).length
  if (missing > 0) problems.push(`${missing} pre-queue tickets are not in the draw`)
  if (extra > 0) problems.push(`${extra} drawn tickets were never answered prequeue here`)
  const wrongRank = o.shownRanks.filter(([t, r]) => ranks.get(t) !== r).length
  if (wrongRank > 0) problems.push(`${wrongRank} visitors were shown another rank than the published one`)
  const early = o.admissions.filter(([, at]) => at < o.opensAt).length
  if (early > 0) problems.push(`${early} admitted before the opening`)
  const inv = drawOrderInversions(ranks, o.admissions)
  if (inv.count > 0) problems.push(`${inv.count} admitted after a later-ranked one (e.g. ${inv.example?.[0]} after ${inv.example?.[1]})`)
  if (o.script !== undefined && !o.script.ok) problems.push(`verify-draw.mjs: ${o.script.output}`)
  return {
    name,
    ok: problems.length === 0,
    measured:
      problems.length === 0
        ? `${d.draw.length} drawn, seed = commitment, values and order check out${o.script ? ' (and verify-draw.mjs)' : ''}; ${inv.compared} admitted in rank order`
        : problems.slice(0, 3).join('; '),
    limit,
    detail:
      'The published draw checked as scripts/verify-draw.mjs does (SHA-256(seed) = the commitment published in the pre-queue, ' +
      'every value an HMAC of the seed, ascending order, ranks 1..n); its tickets are exactly those answered prequeue; ' +
      'the ranks the visitors were shown are the published ones; the store admitted nobody before the opening and the drawn visitors in rank order (its admission record).',
  }
}

/** Spearman's ρ (ties get their mean rank). */
export function spearman(x: readonly number[], y: readonly number[]): number {
  const rank = (a: readonly number[]) => {
    const order = a.map((v, i) => [v, i] as const).sort((p, q) => p[0] - q[0])
    const r = new Array<number>(a.length)
    for (let i = 0; i < order.length; ) {
      let j = i
      while (j < order.length && order[j]![0] === order[i]![0]) j++
      for (let k = i; k < j; k++) r[order[k]![1]] = (i + j - 1) / 2
      i = j
    }
    return r
  }
  const [rx, ry] = [rank(x), rank(y)]
  const n = x.length
  const mean = (n - 1) / 2
  let [sxy, sxx, syy] = [0, 0, 0]
  for (let i = 0; i < n; i++) {
    const [dx, dy] = [rx[i]! - mean, ry[i]! - mean]
    sxy += dx * dy
    sxx += dx * dx
    syy += dy * dy
  }
  return sxx === 0 || syy === 0 ? 0 : sxy / Math.sqrt(sxx * syy)
}

/** |ρ| between when humans joined the pre-queue and their rank in the draw. */
export function arrivalRankVerdict(joined: readonly { joinedAt: number; rank: number }[], limit = 0.1): Verdict {
  const rho = spearman(
    joined.map((j) => j.joinedAt),
    joined.map((j) => j.rank),
  )
  return {
    name: 'rank independent of pre-queue arrival',
    ok: joined.length >= 2 && Math.abs(rho) < limit,
    measured: `Spearman ρ = ${rho.toFixed(3)} over ${joined.length} humans`,
    limit: `|ρ| < ${limit}`,
    detail:
      'Between when a human joined the pre-queue (first prequeue answer) and their rank in the published draw: arriving earlier must gain nothing.',
  }
}

/** One join: a request without a queue token that could take a new place (with its proof of work, if asked). */
export interface JoinRecord {
  /** The client's /24 (or /56). */
  network: string
  bot: boolean
  /** Wall ms (the store's minute windows are on that clock). */
  sent: number
  received: number
  status: number
  /** It got a place (prequeue, queued or admitted, with a queue token). */
  place: boolean
  /** A 429 that carried Retry-After. */
  retryAfter?: boolean
  /** A visitor back after their queue token lapsed (the edge saw a newcomer). */
  lapsed?: boolean
}

/**
 * The network cap: no network got more than `cap` places in one of the store's minutes (fixed windows
 * of `windowMs`; only joins sent and answered inside one window are certain), and every join refused
 * was a 429 with Retry-After.
 */
export function networkCapVerdict(joins: readonly JoinRecord[], cap: number, windowMs = 60_000): Verdict {
  const name = 'no join above the network cap got a place'
  const counts = new Map<string, number>()
  let worst = 0
  let worstKey = ''
  for (const j of joins) {
    const w = Math.floor(j.sent / windowMs)
    if (!j.place || Math.floor(j.received / windowMs) !== w) continue
    const key = `${j.network} minute ${w}`
    const n = (counts.get(key) ?? 0) + 1
    counts.set(key, n)
    if (n > worst) [worst, worstKey] = [n, key]
  }
  const refused = joins.filter((j) => j.status === 429)
  const bare = refused.filter((j) => j.retryAfter !== true).length
  const bots = joins.filter((j) => j.bot)
  const humansRefused = refused.filter((j) => !j.bot).length
  return {
    name,
    ok: worst <= cap && bare === 0,
    measured:
      `most places for one network in one minute ${worst}${worstKey ? ` (${worstKey.replace(/ minute \d+$/, '')})` : ''}; ` +
      `bots: ${bots.filter((j) => j.place).length} places, ${bots.filter((j) => j.status === 429).length} refused (429) of ${bots.length} joins; ` +
      `humans refused ${humansRefused}${bare > 0 ? `; ${bare} refusals without Retry-After` : ''}`,
    limit: `≤ ${cap} a network a minute; 429 with Retry-After`,
    detail:
      "Places per client network in each of the store's minutes (joins sent and answered within one), from the answers; every refused join must be a 429 with Retry-After.",
  }
}

/**
 * FIFO after the opening: arrivals after it (a server arrival at or after opensAt, µs) granted in
 * arrival order among themselves, and none before a pre-queue visitor who kept polling.
 */
export function fifoAfterOpeningVerdict(visitors: VisitorRecord[], opensAtUs: number, abandonAfterMs = Number.POSITIVE_INFINITY): Verdict {
  const late = visitors.filter((v) => v.serverArrival !== undefined && v.serverArrival >= opensAtUs)
  const drawn = visitors.filter((v) => v.serverArrival !== undefined && v.serverArrival < opensAtUs)
  const among = fifoInversions(late, abandonAfterMs)
  const cross = fifoInversions(visitors, abandonAfterMs).count - among.count - fifoInversions(drawn, abandonAfterMs).count
  return {
    name: 'FIFO after the opening',
    ok: among.count === 0 && cross === 0,
    measured: `${among.count} among ${late.length} later arrivals; ${cross} ahead of the pre-queue`,
    limit: '0; 0',
    detail:
      'Arrivals after the opening (their queue token says so): pairs certainly granted out of arrival order, and pairs where a later arrival was certainly granted before a pre-queue visitor who kept polling.',
  }
}
