// The simulation engine: N virtual visitors against a running edge (one started here in-process on
// loopback by default). They arrive on a curve, poll /_anteroom/status the way the queue page does
// (every refreshSeconds, with a little jitter), some give up, and the admitted ones browse the seat map
// and book on the booking origin through the edge. Returns the recorded timelines and the verdicts.
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { serve } from '@hono/node-server'
import { Agent, request } from 'undici'
import { freePort } from '../scripts/lib/free-port.js'
import { type RedisServer, startRedis } from '../scripts/lib/redis-server.js'
import { buildWorker, startWorker } from '../scripts/lib/worker.js'
import { connectRedis } from '../src/adapters/redis/connect.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { loadConfig } from '../src/config/index.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { buildBooking } from '../src/entry/booking.js'
import { buildEdge } from '../src/entry/build.js'
import type { RoomStats } from '../src/ports/queue-store.js'
import { type ArrivalCurve, type Prediction, predict, type RoomLimits } from './predict.js'
import {
  abandonedVerdict,
  activeVerdict,
  type BookingOutcome,
  bookingVerdicts,
  everyoneVerdict,
  fifoVerdict,
  rateVerdicts,
  type StoreSample,
  type Verdict,
  type VisitorRecord,
  waitVerdict,
} from './verdicts.js'

export interface SimOptions {
  visitors: number
  curve: ArrivalCurve
  /** The sale's settings in sale (simulated) time. */
  limits: RoomLimits
  /** Time compression: s sale seconds run in one real second. */
  scale: number
  /** Share of visitors who give up while waiting, and how long they wait first (sale seconds, mean). */
  abandonShare: number
  patienceSeconds: number
  /** Share of admitted visitors who try to buy. */
  buyShare: number
  seed: number
  /** Target an already-running edge instead (its room must match `room` and the scaled limits). */
  edgeUrl?: string
  /** Bearer token for the admin stats API of that edge. */
  adminToken?: string
  /** Use a redis-server started here (true) or at this URL (the room's keys there should be fresh); default: the embedded store. */
  redis?: boolean | string
  /**
   * Which edge the run starts: 'node' (in this process) or 'worker' (the Worker bundle in workerd through
   * Miniflare; it needs Redis, so one is started here unless `redis` is a URL).
   */
  runtime?: 'node' | 'worker'
  /** PostgreSQL URL for the booking origin; default: PGlite. */
  databaseUrl?: string
  room?: string
  /** Give up the run after this many real seconds. */
  maxRealSeconds?: number
  /** Fail the wait verdict above this p99 (sale seconds). */
  maxP99WaitSeconds?: number
  /** Most requests in flight to the edge. */
  connections?: number
  log?: (line: string) => void
}

export interface Scaling {
  scale: number
  requested: RoomLimits
  /** What the edge was given (real seconds; newUsersPerMinute per real minute). */
  real: RoomLimits
  /** The real settings seen in sale time: what the run actually simulates. */
  effective: RoomLimits
  notes: string[]
}

export interface SimResult {
  options: Omit<SimOptions, 'log'>
  scaling: Scaling
  startedAt: string
  realSeconds: number
  visitors: VisitorRecord[]
  samples: StoreSample[]
  /** Tickets over real time. */
  booking: BookingOutcome
  verdicts: Verdict[]
  ok: boolean
  /** The what-if model for the sale as requested (sale time), and for this compressed run (real time). */
  prediction: Prediction
  predictionOfRun: Prediction
  requests: number
  errors: number
  /** What the errors were: a poll's state or status other than queued/paused/admitted, or a failed request. */
  errorKinds: Record<string, number>
}

const SEATS_EVENT = 'demo'

/** Scales sale settings to real ones; the edge's minimums (refresh 2 s, session 10 s, abandon 5 s) win. */
export function scaleLimits(limits: RoomLimits, scale: number): Scaling {
  const notes: string[] = []
  const clamp = (name: string, value: number, min: number) => {
    const v = Math.max(min, Math.round(value))
    if (v !== Math.round(value)) notes.push(`${name} ${value.toFixed(2)} s real is below the edge's minimum; raised to ${v} s`)
    return v
  }
  const refreshSeconds = clamp('refreshSeconds', limits.refreshSeconds / scale, 2)
  const real: RoomLimits = {
    totalActiveUsers: limits.totalActiveUsers,
    newUsersPerMinute: Math.max(1, Math.round(limits.newUsersPerMinute * scale)),
    sessionDurationSeconds: clamp('sessionDurationSeconds', limits.sessionDurationSeconds / scale, 10),
    refreshSeconds,
    abandonAfterSeconds: clamp('abandonAfterSeconds', limits.abandonAfterSeconds / scale, Math.max(5, 2 * refreshSeconds)),
  }
  const effective: RoomLimits = {
    totalActiveUsers: real.totalActiveUsers,
    newUsersPerMinute: real.newUsersPerMinute / scale,
    sessionDurationSeconds: real.sessionDurationSeconds * scale,
    refreshSeconds: real.refreshSeconds * scale,
    abandonAfterSeconds: real.abandonAfterSeconds * scale,
  }
  if (scale !== 1) {
    notes.push(
      `The edge's rate windows are a real 60 s and 10 s, i.e. ${fmtS(60 * scale)} and ${fmtS(10 * scale)} of sale time: ` +
        `admissions may come in bursts of ceil(${real.newUsersPerMinute}/6) = ${Math.ceil(real.newUsersPerMinute / 6)} per real 10 s, ` +
        'so per-sale-minute admissions are lumpier than in an uncompressed sale; the 60-second verdict is checked in real time against the scaled limit.',
    )
  }
  return { scale, requested: limits, real, effective, notes }
}

function fmtS(s: number): string {
  return s >= 120 ? `${(s / 60).toFixed(s % 60 === 0 ? 0 : 1)} min` : `${s} s`
}

/** A small deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Arrival times in sale seconds, sorted, drawn from the curve. */
export function arrivalTimes(visitors: number, curve: ArrivalCurve, random: () => number): number[] {
  const d = Math.max(1, curve.durationSeconds)
  const out: number[] = []
  for (let i = 0; i < visitors; i++) {
    if (curve.kind === 'opening') out.push(random() * Math.min(d, 2))
    else if (curve.kind === 'ramp') out.push(d * Math.sqrt(random()))
    else {
      const waves = Math.max(1, curve.waves ?? 3)
      const period = d / waves
      const w = Math.floor(random() * waves)
      out.push(w * period + random() * Math.max(1, period / 10))
    }
  }
  return out.sort((a, b) => a - b)
}

interface Started {
  edgeUrl: string
  /** The store's own numbers, read beside the edge. */
  stats?: (room: string) => Promise<RoomStats>
  stop(): Promise<void>
  invariant?: () => Promise<BookingOutcome>
}

async function startStack(o: SimOptions, real: RoomLimits, room: string): Promise<Started> {
  const stops: (() => Promise<void>)[] = []
  try {
    let redisUrl: string | undefined
    if (o.redis === true || (o.runtime === 'worker' && typeof o.redis !== 'string')) {
      const r: RedisServer = await startRedis()
      stops.push(() => r.stop())
      redisUrl = r.url
    } else if (typeof o.redis === 'string') redisUrl = o.redis
    const [edgePort, originPort] = [await freePort(), await freePort()]
    const edgeUrl = `http://127.0.0.1:${edgePort}`
    const booking = await buildBooking({
      databaseUrl: o.databaseUrl,
      jwksUrl: `${edgeUrl}/.well-known/jwks.json`,
      issuer: 'anteroom',
      audience: 'origin',
      room,
    })
    stops.push(() => booking.close())
    const rooms = JSON.stringify([{ id: room, paths: ['/'], ...real }])
    const secret = randomBytes(32).toString('hex')
    let stats: Started['stats']
    if (o.runtime === 'worker') {
      // The production Worker bundle, as wrangler builds it for a deploy, in workerd; Redis via StoreRelay.
      const script = await buildWorker('worker/index.ts', resolve('.tmp/sim/worker'))
      const worker = await startWorker({
        script,
        vars: {
          ANTEROOM_ROOMS: rooms,
          ANTEROOM_ORIGIN: `http://127.0.0.1:${originPort}`,
          ANTEROOM_REDIS_URL: redisUrl,
          ANTEROOM_QUEUE_SECRET: secret,
          ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('sim')]),
        },
        port: edgePort,
      })
      stops.push(() => worker.close())
      const redis = connectRedis(redisUrl as string)
      stops.push(async () => redis.disconnect())
      const store = new RedisQueueStore(redis, luaScripts())
      stats = (id) => store.stats(id)
    } else {
      const config = loadConfig({ ANTEROOM_ROOMS: rooms, ANTEROOM_QUEUE_SECRET: secret, ANTEROOM_REDIS_URL: redisUrl })
      const edge = await buildEdge(config, { originUrl: `http://127.0.0.1:${originPort}` })
      stops.push(() => edge.close())
      const server = serve({ fetch: edge.app.fetch, hostname: '127.0.0.1', port: edgePort })
      stops.push(() => new Promise((r) => server.close(() => r())))
      await new Promise((r) => (server.listening ? r(null) : server.once('listening', r)))
      stats = (id) => edge.deps.queue.stats(id)
    }
    const origin = serve({ fetch: booking.app.fetch, hostname: '127.0.0.1', port: originPort })
    stops.push(() => new Promise((r) => origin.close(() => r())))
    await new Promise((r) => (origin.listening ? r(null) : origin.once('listening', r)))
    return {
      edgeUrl,
      stats,
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => {})
      },
      async invariant() {
        const inv = await booking.seats.invariant(SEATS_EVENT)
        const map = await booking.seats.seatMap(SEATS_EVENT)
        return {
          seats: map.length,
          ...inv,
          invariantOk: inv.sold === inv.tickets && inv.tickets === inv.paid,
          soldInMap: map.filter((s) => s.status === 'sold').length,
        }
      },
    }
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    throw err
  }
}

interface Jar {
  cookies: Map<string, string>
}

function cookieHeader(jar: Jar): string | undefined {
  return jar.cookies.size === 0 ? undefined : [...jar.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
}

function absorb(jar: Jar, setCookie: string | string[] | undefined) {
  if (setCookie === undefined) return
  for (const line of Array.isArray(setCookie) ? setCookie : [setCookie]) {
    const [pair = ''] = line.split(';')
    const eq = pair.indexOf('=')
    if (/Max-Age=0/i.test(line)) jar.cookies.delete(pair.slice(0, eq))
    else jar.cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
  }
}

/** The arrival (µs) in a queue token: q1.room.visitor.arrival36.expires36.mac. */
export function tokenArrival(token: string | undefined): number | undefined {
  if (token === undefined) return undefined
  const parts = decodeURIComponent(token).split('.')
  if (parts[0] !== 'q1' || parts.length < 6) return undefined
  const n = Number.parseInt(parts[3]!, 36)
  return Number.isFinite(n) ? n : undefined
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

export async function simulate(o: SimOptions): Promise<SimResult> {
  const room = o.room ?? 'demo'
  const log = o.log ?? (() => {})
  const scaling = scaleLimits(o.limits, o.scale)
  const { real } = scaling
  const random = rng(o.seed)
  const stack: Started = o.edgeUrl ? { edgeUrl: o.edgeUrl.replace(/\/$/, ''), stop: async () => {} } : await startStack(o, real, room)
  const agent = new Agent({ connections: o.connections ?? 64, keepAliveTimeout: 10_000 })
  let requests = 0
  let errors = 0
  const errorKinds: Record<string, number> = {}
  const failed = (kind: string) => {
    errors++
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1
  }
  const t0 = performance.now()
  const now = () => performance.now() - t0

  async function browse(v: VisitorRecord, jar: Jar, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    try {
      return await call(jar, method, path, body, headers)
    } finally {
      v.lastActivityReceived = now()
    }
  }

  async function call(jar: Jar, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    requests++
    const h: Record<string, string> = { accept: 'application/json', ...headers }
    const ck = cookieHeader(jar)
    if (ck) h.cookie = ck
    // The booking origin takes JSON only, and a POST must say so even without a body.
    if (body !== undefined || method === 'POST') h['content-type'] = 'application/json'
    const res = await request(`${stack.edgeUrl}${path}`, {
      method: method as 'GET',
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: agent,
    })
    absorb(jar, res.headers['set-cookie'])
    const text = await res.body.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.statusCode, json: json as Record<string, unknown> | undefined }
  }

  const arrivals = arrivalTimes(o.visitors, o.curve, random)
  const visitors: VisitorRecord[] = arrivals.map((_, id) => ({ id, arrivedAt: 0, abandoned: false, tickets: [] }))
  const plans = arrivals.map((at) => ({
    at: (at / o.scale) * 1000,
    quits: random() < o.abandonShare,
    // Exponential patience around the mean.
    patienceMs: ((-Math.log(1 - random() * 0.999) * o.patienceSeconds) / o.scale) * 1000,
    buys: random() < o.buyShare,
    jitter: random,
  }))
  const deadline = (o.maxRealSeconds ?? 300) * 1000
  const samples: StoreSample[] = []
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const a = now()
      try {
        let s: { waiting: number; active: number; admittedLastMinute: number } | undefined
        if (stack.stats) s = await stack.stats(room)
        else if (o.adminToken) {
          const res = await request(`${stack.edgeUrl}/_anteroom/api/rooms/${room}/stats`, {
            headers: { authorization: `Bearer ${o.adminToken}` },
            dispatcher: agent,
          })
          const j = (await res.body.json()) as { waiting: number; active: number; admittedLastMinute: number }
          if (res.statusCode === 200) s = j
        }
        if (s) samples.push({ t: (a + now()) / 2, waiting: s.waiting, active: s.active, admittedLastMinute: s.admittedLastMinute })
      } catch {
        // A missed sample is only a gap in the chart.
      }
      await sleep(250)
    }
  })()

  let lastAdmittedJar: Jar | undefined
  let observedRefresh: number | undefined
  async function visit(v: VisitorRecord, plan: (typeof plans)[number]) {
    await sleep(plan.at - now())
    const jar: Jar = { cookies: new Map() }
    v.arrivedAt = now()
    const giveUpAt = v.arrivedAt + plan.patienceMs
    for (;;) {
      if (now() > deadline) return
      const sent = now()
      let refresh = real.refreshSeconds
      try {
        const r = await call(jar, 'GET', `/_anteroom/status?room=${room}`)
        const state = r.json?.state
        if (typeof r.json?.refreshSeconds === 'number') refresh = r.json.refreshSeconds
        if (v.lastPollSent !== undefined) v.maxGapMs = Math.max(v.maxGapMs ?? 0, sent - v.lastPollSent)
        v.lastPollSent = sent
        v.lastPollReceived = now()
        if (typeof r.json?.refreshSeconds === 'number') observedRefresh = r.json.refreshSeconds
        if (state === 'admitted') {
          v.admittedSent = sent
          v.admittedReceived = now()
          break
        }
        if (state === 'queued' || state === 'paused') {
          v.lastQueuedSent = sent
          v.serverArrival ??= tokenArrival(jar.cookies.get(`anteroom_q_${room}`))
        } else failed(`poll ${r.status} ${typeof state === 'string' ? state : 'no state'}`)
      } catch (err) {
        failed(`poll request failed: ${err instanceof Error ? err.name : 'error'}`)
      }
      // The queue page polls every refreshSeconds; timers in real browsers drift a little.
      const next = sent + refresh * 1000 * (0.95 + 0.1 * plan.jitter())
      if (plan.quits && next > giveUpAt) {
        v.abandoned = true
        return
      }
      await sleep(next - now())
    }
    lastAdmittedJar = jar
    // Admitted: look at the seat map and maybe buy one or two seats.
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const map = await browse(v, jar, 'GET', `/events/${SEATS_EVENT}/seats`)
        const free = ((map.json?.seats as { seat: string; status: string }[] | undefined) ?? []).filter((s) => s.status === 'free')
        if (!plan.buys || free.length === 0) return
        const want = 1 + Math.floor(plan.jitter() * 2)
        const start = Math.floor(plan.jitter() * free.length)
        const seats = Array.from({ length: Math.min(want, free.length) }, (_, i) => free[(start + i) % free.length]!.seat)
        const hold = await browse(v, jar, 'POST', `/events/${SEATS_EVENT}/holds`, { seats })
        if (hold.status === 409) continue
        if (hold.status !== 201) return
        const id = (hold.json?.hold as { id?: string } | undefined)?.id
        if (id === undefined) return
        const paid = await browse(v, jar, 'POST', `/holds/${id}/confirm`, undefined, { 'idempotency-key': `sim-${o.seed}-${v.id}-${id}` })
        if (paid.status === 200) {
          v.tickets = ((paid.json?.tickets as { seat: string }[] | undefined) ?? []).map((t) => t.seat)
          v.boughtAt = now()
        }
        return
      }
    } catch (err) {
      failed(`booking request failed: ${err instanceof Error ? err.name : 'error'}`)
    }
  }

  let booking: BookingOutcome
  let realSeconds: number
  try {
    log(`simulate: ${o.visitors} visitors, ${o.curve.kind}, scale ${o.scale}x, edge ${stack.edgeUrl}`)
    const progress = setInterval(() => {
      const admitted = visitors.filter((v) => v.admittedReceived !== undefined).length
      const gone = visitors.filter((v) => v.abandoned).length
      log(`  ${(now() / 1000).toFixed(0)} s: admitted ${admitted}, gave up ${gone}, requests ${requests}`)
    }, 5000)
    await Promise.all(visitors.map((v, i) => visit(v, plans[i]!)))
    clearInterval(progress)
    realSeconds = now() / 1000
    sampling = false
    await sampler
    if (stack.invariant) booking = await stack.invariant()
    else booking = await remoteInvariant(lastAdmittedJar)
  } finally {
    sampling = false
    await agent.close().catch(() => {})
    await stack.stop()
  }

  async function remoteInvariant(jar: Jar | undefined): Promise<BookingOutcome> {
    const empty = { seats: 0, sold: 0, tickets: 0, paid: 0, invariantOk: false, soldInMap: 0 }
    if (!jar) return empty
    const inv = await call(jar, 'GET', `/events/${SEATS_EVENT}/invariant`)
    const map = await call(jar, 'GET', `/events/${SEATS_EVENT}/seats`)
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

  const sessionMs = real.sessionDurationSeconds * 1000
  const verdicts: Verdict[] = [
    activeVerdict(visitors, samples, real.totalActiveUsers, sessionMs),
    ...rateVerdicts(visitors, samples, real.newUsersPerMinute),
    fifoVerdict(visitors, real.abandonAfterSeconds * 1000),
    abandonedVerdict(visitors, samples, { sessionMs, abandonAfterMs: real.abandonAfterSeconds * 1000, slackMs: 1000 }),
    ...bookingVerdicts(visitors, booking),
    everyoneVerdict(visitors),
    waitVerdict(visitors, o.scale, o.maxP99WaitSeconds),
  ]
  if (o.edgeUrl) {
    scaling.notes.push(
      `External edge: its room settings were not set by the simulator; the verdicts assume the "given to the edge" column. ` +
        'Sessions left in its store by earlier runs count against the active and abandoned-slot verdicts.',
    )
  }
  if (observedRefresh !== undefined && observedRefresh !== real.refreshSeconds) {
    scaling.notes.push(
      `The edge answered refreshSeconds ${observedRefresh}, not ${real.refreshSeconds}: its settings do not match this run's.`,
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
    requests,
    errors,
    errorKinds,
  }
}
