// The simulation engine: N virtual visitors against a running edge (one started here in-process on
// loopback by default). They arrive on a curve, poll /_anteroom/status the way the queue page does
// (every refreshSeconds, with a little jitter), some give up, and the admitted ones browse the seat map
// and book on the booking origin through the edge. Returns the recorded timelines and the verdicts.
// The parts of a run are in sale/: basics.ts (options, scaling, arrivals), stack.ts (what is started),
// context.ts (the state the parts share), visitors.ts, shoppers.ts, bots.ts, samplers.ts, fault.ts, draw.ts.
import { recoveryMs } from '../src/core/admission.js'
import { predict } from './predict.js'
import {
  arrivalTimes,
  rng,
  type ScheduledOutcome,
  SEATS_EVENT,
  type SimOptions,
  type SimResult,
  scaleLimits,
  sleep,
} from './sale/basics.js'
import { BotFarm } from './sale/bots.js'
import { RunContext } from './sale/context.js'
import { peekCommitment, publishedDraw, verifyDrawScript } from './sale/draw.js'
import { faultAtMs, runFault } from './sale/fault.js'
import { AdmissionRecord, sampleEdgeStock, sampleGate, sampleStore } from './sale/samplers.js'
import { type Started, startStack } from './sale/stack.js'
import { humanAgents, planVisitors, visit } from './sale/visitors.js'
import {
  abandonedVerdict,
  activeVerdict,
  arrivalRankVerdict,
  type BookingOutcome,
  bookingVerdicts,
  drawVerdict,
  etaVerdict,
  everyoneVerdict,
  fifoAfterOpeningVerdict,
  fifoVerdict,
  type GateSample,
  networkCapVerdict,
  noAdmissionAfterVerdict,
  nothingFreeStretches,
  type PublishedDraw,
  placesKeptVerdict,
  placesVerdict,
  rateVerdicts,
  recoveryVerdict,
  type SoldOutInput,
  type StoreSample,
  soldOutToldVerdict,
  type Verdict,
  type VisitorRecord,
  waitVerdict,
} from './verdicts.js'

export {
  arrivalTimes,
  CLIENT_KEEP_ALIVE_MS,
  rng,
  type Scaling,
  type ScheduledOutcome,
  type SimOptions,
  type SimResult,
  scaleLimits,
  scheduledArrivalTimes,
} from './sale/basics.js'
export { tokenArrival } from './sale/context.js'
export type { RedisHere } from './sale/stack.js'
export { browserSolve } from './sale/visitors.js'

export async function simulate(o: SimOptions): Promise<SimResult> {
  const log = o.log ?? (() => {})
  const scaling = scaleLimits(o.limits, o.scale)
  const { real } = scaling
  const random = rng(o.seed)
  if (o.fault !== undefined && o.edgeUrl) throw new Error('a store fault needs the edge and Redis started by the simulator (no --edge)')
  // A scheduled sale: the schedule is set in wall time before the edge starts, with room for it to start.
  const scheduled = o.curve.kind === 'scheduled'
  if (scheduled && o.edgeUrl) throw new Error('a scheduled sale sets the room schedule: it needs the edge started here (no --edge)')
  if (o.soldOut && o.edgeUrl)
    throw new Error('a sold-out sale reads the claim gate beside the edge: it needs the edge started here (no --edge)')
  if ((o.bots?.count ?? 0) > 0 && o.edgeUrl)
    throw new Error('a bot farm connects from loopback addresses to an edge started here (no --edge)')
  const leadSeconds = o.leadSeconds ?? 30
  // Time for the stack to start (PGlite takes a few seconds): the schedule must lie after it.
  const saleZeroWall = Date.now() + (o.runtime === 'worker' ? 30_000 : 10_000)
  const prequeueWall = saleZeroWall + (leadSeconds / o.scale) * 1000
  const opensWall = prequeueWall + (Math.max(1, o.curve.durationSeconds) / o.scale) * 1000
  const schedule = scheduled ? { prequeueAt: new Date(prequeueWall).toISOString(), opensAt: new Date(opensWall).toISOString() } : undefined
  const stack: Started = o.edgeUrl
    ? { edgeUrl: o.edgeUrl.replace(/\/$/, ''), stop: async () => {} }
    : await startStack(o, real, o.room ?? 'demo', schedule)
  if (scheduled) {
    if (Date.now() > saleZeroWall)
      log(`  the edge took ${((Date.now() - saleZeroWall) / 1000).toFixed(1)} s longer to start than allowed: the sale starts late`)
    await sleep(saleZeroWall - Date.now())
  }
  const humans = humanAgents(o)
  const ctx = new RunContext({ o, stack, real, random, prequeueWall, opensWall })
  const { now, deadline, sessionMs, wallAtZero, prequeueAtRun, opensAtRun, joins } = ctx

  const arrivals = arrivalTimes(o.visitors, o.curve, random, leadSeconds)
  const visitors: VisitorRecord[] = arrivals.map((_, id) => ({ id, arrivedAt: 0, abandoned: false, tickets: [] }))
  const plans = planVisitors(ctx, arrivals, humans)

  const samples: StoreSample[] = []
  const sampler = sampleStore(ctx, samples)
  const gateSamples: GateSample[] = []
  const gateSampler = sampleGate(ctx, gateSamples)
  const edgeStates: Record<string, number> = {}
  const edgeSampler = sampleEdgeStock(ctx, edgeStates)
  const record = new AdmissionRecord(ctx)
  const recorded = record.recorded
  const collector = record.run()
  const faultDone = runFault(ctx, record)
  const farm = new BotFarm(ctx)
  const botPlaces = farm.places

  // The draw: its commitment during the pre-queue, and after the sale every page of it.
  let commitmentBefore: string | undefined
  const drawPeek = peekCommitment(ctx).then((c) => {
    commitmentBefore = c
  })
  let draw: PublishedDraw | undefined

  let booking: BookingOutcome
  let edgeEvents: Record<string, number> = {}
  let realSeconds: number
  try {
    log(
      `simulate: ${o.visitors} visitors, ${o.curve.kind}, scale ${o.scale}x, edge ${stack.edgeUrl}${o.fault ? `, ${o.fault.kind} at ${(faultAtMs(ctx) / 1000).toFixed(1)} s` : ''}`,
    )
    const progress = setInterval(() => {
      const admitted = visitors.filter((v) => v.admittedReceived !== undefined).length
      const gone = visitors.filter((v) => v.abandoned).length
      log(`  ${(now() / 1000).toFixed(0)} s: admitted ${admitted}, gave up ${gone}, requests ${ctx.requests}`)
    }, 5000)
    const bots = o.bots && o.bots.count > 0 ? o.bots : undefined
    const botRuns = Array.from({ length: bots?.count ?? 0 }, (_, b) => farm.run(b, bots!))
    await Promise.all([...visitors.map((v, i) => visit(ctx, v, plans[i]!)), faultDone, drawPeek, ...botRuns])
    await Promise.all(farm.tasks)
    clearInterval(progress)
    realSeconds = now() / 1000
    ctx.sampling = false
    await sampler
    await gateSampler
    await edgeSampler
    await collector
    await record.collect()
    if (stack.invariant) booking = await stack.invariant()
    else booking = await remoteInvariant(ctx)
    if (scheduled) draw = await publishedDraw(ctx)
  } finally {
    ctx.sampling = false
    await ctx.agent.close().catch(() => {})
    for (const a of [...humans.agents, ...farm.agents]) await a.close().catch(() => {})
    edgeEvents = stack.edgeEvents?.() ?? {}
    await stack.stop()
  }

  const fault = ctx.fault
  const cap = o.networkCap ?? 0
  const humanAgentsCount = humans.agents.length
  const admissions = stack.admissions ? [...recorded.values()].map((ms) => ms - wallAtZero).sort((a, b) => a - b) : undefined
  const recovery = recoveryMs(real.refreshSeconds)
  const abandonAfterMs = real.abandonAfterSeconds * 1000
  // The store admits nobody for the recovery after a loss (or a failover that lost writes): not a slow rate.
  // Nor after the deadline, when the visitors stopped polling.
  const excluded: [number, number][] = [[deadline, Number.POSITIVE_INFINITY]]
  // Without the store's reservation in the samples, the room looks emptier than it is for a session
  // length after a loss (the slots kept for the sessions from before): left out too.
  const seesReserved = samples.some((x) => x.reserved !== undefined)
  // Before a scheduled sale opens the line is long and nobody may be admitted: not a slow rate either;
  // nor the second after it, which its first burst (a second's admissions at once) used up.
  if (scheduled) excluded.push([Number.NEGATIVE_INFINITY, opensAtRun + 1000])
  if (fault) excluded.push([fault.start, fault.end + (seesReserved ? recovery : Math.max(recovery, sessionMs)) + 1000])
  // Nobody is let in while the event has nothing free, by design: not a slow rate either.
  const reloadMs = 1000
  if (o.soldOut) excluded.push(...nothingFreeStretches(gateSamples, reloadMs, 250))
  // Bot places take slots like anyone's: in the store-side verdicts, not in the waits. In a scheduled
  // sale a wait runs from the opening (nobody is admitted before it).
  const all = botPlaces.length > 0 ? [...visitors, ...botPlaces] : visitors
  if (scheduled)
    for (const v of all) {
      v.requestedAt = v.arrivedAt
      v.arrivedAt = Math.max(v.arrivedAt, opensAtRun)
    }
  const verdicts: Verdict[] = [
    activeVerdict(all, samples, real.totalActiveUsers, sessionMs),
    ...rateVerdicts(all, samples, {
      perMinute: real.newUsersPerMinute,
      record: admissions,
      totalActiveUsers: real.totalActiveUsers,
      excluded,
    }),
    fifoVerdict(all, abandonAfterMs, fault),
    ...(fault
      ? [placesVerdict(visitors, abandonAfterMs, fault), recoveryVerdict(fault, admissions, recovery, o.scale)]
      : [placesKeptVerdict(visitors, abandonAfterMs)]),
    abandonedVerdict(all, samples, { sessionMs, abandonAfterMs, slackMs: 1000, fault }),
    ...bookingVerdicts(visitors, booking),
    everyoneVerdict(all, o.soldOut === true),
    waitVerdict(visitors, o.scale, o.maxP99WaitSeconds),
    etaVerdict(visitors, o.etaRequired ?? false),
  ]
  if (o.soldOut) {
    const sales = visitors.flatMap((v) => (v.boughtAt === undefined ? [] : [v.boughtAt]))
    const soldOut: SoldOutInput = {
      gate: gateSamples,
      lastSaleAt: sales.length === 0 ? undefined : Math.max(...sales),
      record: admissions,
      reloadMs,
      refreshMs: real.refreshSeconds * 1000,
    }
    verdicts.push(soldOutToldVerdict(all, soldOut), noAdmissionAfterVerdict(all, soldOut))
  }
  let scheduledOutcome: ScheduledOutcome | undefined
  if (scheduled) {
    const ranks = new Map((draw?.draw ?? []).map((e) => [e.ticket, e.rank]))
    // The store's record: the first admission of each visitor (members are "visitor:ms").
    const firstAdmission = new Map<string, number>()
    for (const [member, at] of recorded) {
      const t = member.slice(0, member.lastIndexOf(':'))
      if (!firstAdmission.has(t) || at < firstAdmission.get(t)!) firstAdmission.set(t, at)
    }
    verdicts.push(
      drawVerdict(draw, {
        commitmentBefore,
        prequeueTickets: all.flatMap((v) => v.prequeueTickets ?? []),
        shownRanks: all.flatMap((v) => (v.drawShown ? [v.drawShown] : [])),
        admissions: [...firstAdmission],
        opensAt: opensWall,
        script: draw ? await verifyDrawScript(draw) : undefined,
      }),
      arrivalRankVerdict(
        // Each human's first place in the pre-queue.
        visitors
          .filter((v) => v.joinedAt !== undefined && ranks.has(v.prequeueTickets?.[0] ?? ''))
          .map((v) => ({ joinedAt: v.joinedAt!, rank: ranks.get(v.prequeueTickets![0]!)! })),
      ),
      fifoAfterOpeningVerdict(all, opensWall * 1000, abandonAfterMs),
    )
    const solved = visitors.filter((v) => (v.powSolves ?? 0) > 0)
    const ms = solved.map((v) => v.powMs! / v.powSolves!).sort((a, b) => a - b)
    scheduledOutcome = {
      prequeueAt: prequeueAtRun,
      opensAt: opensAtRun,
      prequeueHumans: visitors.filter((v) => v.joinedAt !== undefined).length,
      lateHumans: visitors.filter((v) => v.joinedAt === undefined && v.serverArrival !== undefined).length,
      lateButCameBefore: visitors.filter((v) => v.joinedAt === undefined && v.serverArrival !== undefined && v.requestedAt! < opensAtRun)
        .length,
      drawn: draw?.entrants ?? 0,
      draw,
      joins,
      humanNetworks: humanAgentsCount || 1,
    }
    if (o.bots && o.bots.count > 0) scheduledOutcome.bots = { clients: o.bots.count, networks: o.bots.networks, ...farm.stats }
    if (solved.length > 0) {
      scheduledOutcome.humanPow = {
        solves: solved.reduce((n, v) => n + v.powSolves!, 0),
        meanHashes: solved.reduce((n, v) => n + v.powHashes!, 0) / solved.reduce((n, v) => n + v.powSolves!, 0),
        meanMs: ms.reduce((a, b) => a + b, 0) / ms.length,
        p95Ms: ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.95))]!,
      }
    }
  }
  if (cap > 0) verdicts.push(networkCapVerdict(joins, cap))
  if (o.edgeUrl) {
    scaling.notes.push(
      `External edge: its room settings were not set by the simulator; the verdicts assume the "given to the edge" column. ` +
        'Sessions left in its store by earlier runs count against the active and abandoned-slot verdicts.',
    )
  }
  if (ctx.observedRefresh !== undefined && ctx.observedRefresh !== real.refreshSeconds) {
    scaling.notes.push(
      `The edge answered refreshSeconds ${ctx.observedRefresh}, not ${real.refreshSeconds}: its settings do not match this run's.`,
    )
  }
  const predInput = { visitors: o.visitors, abandonShare: o.abandonShare, patienceSeconds: o.patienceSeconds }
  const prediction = predict({ ...predInput, curve: o.curve, limits: o.limits, pickupSeconds: o.limits.refreshSeconds })
  const predictionOfRun = predict({
    ...predInput,
    patienceSeconds: o.patienceSeconds / o.scale,
    curve: { ...o.curve, durationSeconds: o.curve.durationSeconds / o.scale },
    limits: real,
    binSeconds: 60 / o.scale,
    // In real time a compressed run's limits are short (a 10-s session, a burst every 10 s): tenth-second steps.
    stepSeconds: o.scale > 1 ? 0.1 : 1,
    pickupSeconds: real.refreshSeconds,
  })
  const { log: _log, ...options } = o
  return {
    options,
    scaling,
    startedAt: new Date(Date.now() - realSeconds * 1000).toISOString(),
    realSeconds,
    visitors,
    samples,
    booking,
    verdicts,
    ok: verdicts.every((v) => v.ok),
    prediction,
    predictionOfRun,
    requests: ctx.requests,
    errors: ctx.errors,
    errorKinds: ctx.errorKinds,
    edgeEvents,
    checkouts: ctx.checkouts,
    fault,
    admissions,
    ...(scheduledOutcome ? { scheduled: scheduledOutcome } : {}),
    ...(botPlaces.length > 0 ? { botPlaces } : {}),
    ...(o.soldOut ? { gate: gateSamples, edgeStates } : {}),
  }
}

/** An external edge's booking origin: its invariant and seat map, read with the last admitted visitor's cookies. */
async function remoteInvariant(ctx: RunContext): Promise<BookingOutcome> {
  const jar = ctx.lastAdmittedJar
  const empty = { seats: 0, sold: 0, tickets: 0, paid: 0, invariantOk: false, soldInMap: 0 }
  if (!jar) return empty
  const inv = await ctx.call(jar, 'GET', `/events/${SEATS_EVENT}/invariant`)
  const map = await ctx.call(jar, 'GET', `/events/${SEATS_EVENT}/seats`)
  const seats = (map.json?.seats as { status: string }[] | undefined) ?? []
  const j = (inv.json ?? {}) as { sold?: number; tickets?: number; paid?: number; ok?: boolean }
  return {
    seats: seats.length,
    sold: j.sold ?? 0,
    tickets: j.tickets ?? 0,
    paid: j.paid ?? 0,
    invariantOk: j.ok === true,
    soldInMap: seats.filter((s) => s.status === 'sold').length,
  }
}
