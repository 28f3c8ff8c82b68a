// The visitors of a sale: each arrives at its planned time, polls /_anteroom/status the way the queue
// page does (every refreshSeconds, with a little jitter; a proof of work when asked), may give up, and
// once admitted shops (shoppers.ts) and browses a while. A bot's place is polled the same way.
import { Agent } from 'undici'
import { nodeDigest } from '../../src/adapters/node/digest.js'
import { leadingZeroBits } from '../../src/core/pow.js'
import type { VisitorRecord } from '../verdicts.js'
import { CLIENT_KEEP_ALIVE_MS, errorName, rng, SEATS_EVENT, type SimOptions, sleep } from './basics.js'
import { type Jar, type RunContext, tokenArrival, tokenVisitor } from './context.js'
import { shop } from './shoppers.js'

/** How one visitor behaves, drawn before the sale. */
export interface Plan {
  /** Run ms of the first request. */
  at: number
  /** Where this visitor's requests come from (a network of their own with a cap). */
  agent: Agent | undefined
  network: string
  bot: boolean
  quits: boolean
  patienceMs: number
  buys: boolean
  browseMs: number
  jitter: () => number
  payMs: number
  releases: boolean
}

/** The humans' agents: with a network cap, humans come from their own /24s, a few each (the cap counts per network). */
export function humanAgents(o: SimOptions): { agents: Agent[]; perNetwork: number } {
  const cap = o.networkCap ?? 0
  const perNetwork = Math.max(1, o.humansPerNetwork ?? Math.floor(cap / 2))
  const agents =
    cap > 0
      ? Array.from(
          { length: Math.ceil(o.visitors / perNetwork) },
          (_, n) => new Agent({ connections: 2, keepAliveTimeout: CLIENT_KEEP_ALIVE_MS, localAddress: humanAddress(n) }),
        )
      : []
  return { agents, perNetwork }
}

/** Each visitor's plan, from the run's PRNG (arrivals, then plans, in this order: the same seed, the same sale). */
export function planVisitors(ctx: RunContext, arrivals: number[], humans: { agents: Agent[]; perNetwork: number }): Plan[] {
  const { o, scheduled, prequeueAtRun, leadSeconds, random } = ctx
  const cap = o.networkCap ?? 0
  const { agents, perNetwork } = humans
  // Paying and releasing draw from their own PRNG: a sale without them keeps its arrivals.
  const paying = rng(o.seed ^ 0x5eed5)
  return arrivals.map((at, i) => ({
    at: scheduled ? prequeueAtRun + ((at - leadSeconds) / o.scale) * 1000 : (at / o.scale) * 1000,
    agent: agents[Math.floor(i / perNetwork)] as Agent | undefined,
    network: cap > 0 ? `${humanAddress(Math.floor(i / perNetwork)).replace(/\.1$/, '.0')}/24` : '127.0.0.0/24',
    bot: false,
    quits: random() < o.abandonShare,
    // Exponential patience around the mean.
    patienceMs: ((-Math.log(1 - random() * 0.999) * o.patienceSeconds) / o.scale) * 1000,
    buys: random() < o.buyShare,
    browseMs: ((-Math.log(1 - random() * 0.999) * (o.browseSeconds ?? 0)) / o.scale) * 1000,
    jitter: random,
    payMs: o.paySeconds ? (((0.5 + paying()) * o.paySeconds) / o.scale) * 1000 : 0,
    releases: (o.releaseShare ?? 0) > 0 && paying() < (o.releaseShare ?? 0),
  }))
}

export async function visit(ctx: RunContext, v: VisitorRecord, plan: Plan, given?: Jar): Promise<void> {
  const { o, room, real, deadline, scheduled, opensAtRun, queueCookie, admissionCookie, sessionMs, joins, now, call, browse, failed } = ctx
  await sleep(plan.at - now())
  const jar: Jar = given ?? { cookies: new Map(), agent: plan.agent }
  v.arrivedAt = now()
  // In a scheduled sale patience runs from the opening: the pre-queue is a wait for it.
  const giveUpAt = (scheduled ? Math.max(v.arrivedAt, opensAtRun) : v.arrivedAt) + plan.patienceMs
  let powAnswer: string | undefined
  for (;;) {
    if (now() > deadline) return
    const sent = now()
    let refresh = real.refreshSeconds
    let pollAfter: number | undefined
    let received = sent
    try {
      const held = jar.cookies.get(queueCookie)
      const answered = powAnswer
      powAnswer = undefined
      const sentWall = Date.now()
      const r = await call(
        jar,
        'GET',
        `/_anteroom/status?room=${room}`,
        undefined,
        answered === undefined ? {} : { 'anteroom-pow': answered },
      )
      received = now()
      const state = r.json?.state
      // A join: no cookie of the edge's, or a queue token the edge took as lapsed (it answered with
      // another visitor id, or refused the join): it then saw a newcomer. A token past its expiry
      // still counts at an edge that reads polls late (src/core/lateness.ts), so the expiry alone
      // does not say; the answer does.
      const unadmitted = !jar.cookies.has(admissionCookie)
      const given = jar.cookies.get(queueCookie)
      const lapsed =
        held !== undefined &&
        unadmitted &&
        (r.status === 429 || (tokenVisitor(given) !== undefined && tokenVisitor(given) !== tokenVisitor(held)))
      if (lapsed) v.lapsedTokens = (v.lapsedTokens ?? 0) + 1
      const joining = lapsed || (held === undefined && unadmitted)
      if (joining && (!o.powDifficulty || answered !== undefined) && state !== 'scheduled') {
        const place = state === 'prequeue' || state === 'queued' || state === 'admitted'
        joins.push({
          network: plan.network,
          bot: false,
          sent: sentWall,
          received: Date.now(),
          status: r.status,
          place,
          ...(lapsed ? { lapsed } : {}),
        })
        if (r.status === 429) joins[joins.length - 1]!.retryAfter = Number.isFinite(r.retryAfter)
      }
      // Proof of work: solved as the page's worker does, and sent at once with the next status request.
      const challenge = (r.json?.challenge ?? (r.json?.error as Record<string, unknown> | undefined)?.challenge) as
        | { value?: unknown; difficulty?: unknown }
        | undefined
      if (typeof challenge?.value === 'string' && typeof challenge.difficulty === 'number') {
        const solved = await browserSolve(challenge.value, challenge.difficulty)
        v.powSolves = (v.powSolves ?? 0) + 1
        v.powHashes = (v.powHashes ?? 0) + solved.hashes
        v.powMs = (v.powMs ?? 0) + solved.ms
        powAnswer = solved.answer
        continue
      }
      const ticket = typeof r.json?.ticket === 'string' ? r.json.ticket : undefined
      if (ticket !== undefined) v.ticket = ticket
      if (ticket !== undefined && state === 'prequeue' && !v.prequeueTickets?.includes(ticket)) (v.prequeueTickets ??= []).push(ticket)
      const drawn = r.json?.draw as { rank?: unknown } | undefined
      if (ticket !== undefined && typeof drawn?.rank === 'number') v.drawShown = [ticket, drawn.rank]
      if (typeof r.json?.refreshSeconds === 'number') refresh = r.json.refreshSeconds
      if (typeof r.json?.nextPollSeconds === 'number' && r.json.nextPollSeconds > 0) pollAfter = r.json.nextPollSeconds
      if (v.lastPollSent !== undefined) v.maxGapMs = Math.max(v.maxGapMs ?? 0, sent - v.lastPollSent)
      v.lastPollSent = sent
      const previousAnswer = v.lastPollReceived
      v.lastPollReceived = received
      if (typeof r.json?.refreshSeconds === 'number') ctx.observedRefresh = r.json.refreshSeconds
      if (state === 'admitted') {
        v.admittedSent = sent
        v.admittedReceived = received
        v.sessionEnd = sent + sessionMs
        break
      }
      if (state === 'sold_out') {
        // Told the event has sold out: the visitor leaves (the edge keeps a place in line, if they had one).
        v.soldOutToldAt = received
        return
      }
      if (state === 'all_held') v.heldAnswers = (v.heldAnswers ?? 0) + 1
      if (state === 'queued' || state === 'paused' || state === 'recovering' || state === 'prequeue' || state === 'all_held') {
        if (state === 'prequeue') v.joinedAt ??= sent
        v.lastQueuedSent = sent
        // Sorted by the fault: answered before it began, or sent after the store was back.
        if (!ctx.faultStarted) v.lastQueuedBeforeFault = sent
        else if (ctx.fault !== undefined && ctx.fault.end > ctx.fault.start && sent > ctx.fault.end) v.lastQueuedAfterFault = sent
        const arrival = tokenArrival(jar.cookies.get(queueCookie))
        if (v.serverArrival === undefined) v.serverArrival = arrival
        else if (arrival !== undefined && arrival > v.serverArrival) {
          v.movedBack = (v.movedBack ?? 0) + 1
          v.movedBackFirst ??= { at: sent, byMs: (arrival - v.serverArrival) / 1000, gapMs: sent - (previousAnswer ?? sent) }
        }
        if (state === 'queued') {
          const eta = r.json?.etaSeconds
          const range = r.json?.etaRange
          const [low, high] = Array.isArray(range) && range.length === 2 ? (range as unknown[]) : [undefined, undefined]
          const num = (x: unknown) => (typeof x === 'number' ? x : Number.NaN)
          ;(v.estimates ??= []).push(received, num(eta), num(low), num(high))
        }
        if (state === 'recovering') {
          v.recoveringPolls = (v.recoveringPolls ?? 0) + 1
          if (ctx.fault === undefined) failed('poll 200 recovering (no fault)')
          else ctx.fault.recovering = [ctx.fault.recovering?.[0] ?? received, received]
        }
      } else if (r.status === 429 && joining && (r.json?.error as { code?: unknown } | undefined)?.code === 'ERR_TOO_MANY_JOINS') {
        // Over the network cap: try again when the edge says.
        v.refusedJoins = (v.refusedJoins ?? 0) + 1
        if (r.retryAfter !== undefined && Number.isFinite(r.retryAfter)) pollAfter = r.retryAfter
      } else if (state !== 'scheduled') {
        if (ctx.fault !== undefined && r.status === 503 && state === 'busy') ctx.fault.busy++
        else failed(`poll ${r.status} ${typeof state === 'string' ? state : 'no state'}`)
      }
    } catch (err) {
      failed(`poll request failed: ${errorName(err)}`)
    }
    // The queue page polls when the answer says (nextPollSeconds, from when it came), else every
    // refreshSeconds; timers in real browsers drift a little.
    const next =
      pollAfter !== undefined
        ? received + pollAfter * 1000 * (0.98 + 0.04 * plan.jitter())
        : sent + refresh * 1000 * (0.95 + 0.1 * plan.jitter())
    if (plan.quits && next > giveUpAt) {
      v.abandoned = true
      return
    }
    await sleep(next - now())
  }
  // A bot's place: the session is held, nothing bought.
  if (plan.bot) return
  ctx.lastAdmittedJar = jar
  // Admitted: look at the seat map and maybe buy one or two seats, then browse a while.
  try {
    await shop(ctx, v, jar, plan)
    // The origin ended the session with the purchase: the visitor is done.
    if (v.sessionEndedAt !== undefined) return
    const leaveAt = (v.admittedReceived ?? now()) + plan.browseMs
    while (now() + real.refreshSeconds * 1000 < leaveAt && now() < deadline) {
      await sleep(real.refreshSeconds * 1000 * (0.95 + 0.1 * plan.jitter()))
      await browse(v, jar, 'GET', `/events/${SEATS_EVENT}/seats`)
    }
  } catch (err) {
    failed(`booking request failed: ${errorName(err)}`)
  }
}

/**
 * Solves a challenge as the queue page's worker does (src/http/pow.ts), one worker: nonces 0, 1, 2, ...
 * in base 36, so the same hashes. With node:crypto (about 1 µs a hash) rather than WebCrypto (about
 * 30 µs on Node): the browser's work is done on the visitor's device, not beside the edge. Yields to
 * the event loop every 4096 hashes.
 */
export async function browserSolve(challenge: string, difficulty: number): Promise<{ answer: string; hashes: number; ms: number }> {
  const t0 = performance.now()
  for (let n = 0; ; n++) {
    const answer = `${challenge}.${n.toString(36)}`
    if (leadingZeroBits(nodeDigest.sha256(answer) as Uint8Array) >= difficulty) return { answer, hashes: n + 1, ms: performance.now() - t0 }
    if (n % 4096 === 4095) await new Promise((r) => setImmediate(r))
  }
}

/** A loopback address in /24 number `n` (127.1.0.0/24 onwards: humans; bots use 127.0.1.0/24 onwards). */
export function humanAddress(n: number): string {
  return `127.${1 + Math.floor(n / 256)}.${n % 256}.1`
}
