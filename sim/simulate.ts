// The simulation engine: N virtual visitors against a running edge (one started here in-process on
// loopback by default). They arrive on a curve, poll /_anteroom/status the way the queue page does
// (every refreshSeconds, with a little jitter), some give up, and the admitted ones browse the seat map
// and book on the booking origin through the edge. Returns the recorded timelines and the verdicts.
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { serve } from '@hono/node-server'
import { Agent, request } from 'undici'
import { freePort } from '../scripts/lib/free-port.js'
import { startSentinelSet } from '../scripts/lib/redis-sentinel.js'
import { type RedisServer, startRedis } from '../scripts/lib/redis-server.js'
import { buildWorker, startWorker } from '../scripts/lib/worker.js'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { nodeDigest } from '../src/adapters/node/digest.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { connectRedis } from '../src/adapters/redis/connect.js'
import { roomKeys } from '../src/adapters/redis/keys.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { loadConfig } from '../src/config/index.js'
import { recoveryMs } from '../src/core/admission.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { leadingZeroBits, solveChallenge } from '../src/core/pow.js'
import { buildBooking } from '../src/entry/booking.js'
import { buildEdge } from '../src/entry/build.js'
import type { ClaimGate, StockCounts } from '../src/ports/claim-gate.js'
import type { QueueStore, RoomStats } from '../src/ports/queue-store.js'
import { type ArrivalCurve, type Prediction, predict, type RoomLimits } from './predict.js'
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
  type JoinRecord,
  networkCapVerdict,
  noAdmissionAfterVerdict,
  nothingFreeStretches,
  type PublishedDraw,
  placesVerdict,
  rateVerdicts,
  recoveryVerdict,
  type SoldOutInput,
  type StoreFault,
  type StoreSample,
  soldOutToldVerdict,
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
  /**
   * How long admitted visitors keep browsing (loading the seat map every refreshSeconds) after their
   * purchase, sale seconds, exponential around this mean; 0 (the default): they leave at once. A visit
   * past half the session renews it.
   */
  browseSeconds?: number
  /**
   * A fault of the store mid-sale, `atSeconds` sale seconds after the start (default: half the arrival
   * period): 'flush' (FLUSHALL: Redis forgets everything), 'restart' (redis-server killed and started
   * again empty on the same port), 'failover' (a Sentinel set, its primary killed). Needs the
   * redis-server (or Sentinel set) started by the simulator.
   */
  fault?: { kind: StoreFault['kind']; atSeconds?: number }
  /** Make the ETA accuracy a pass/fail verdict (90% within ±20%) instead of informational. */
  etaRequired?: boolean
  /**
   * The room allows origin commands and the booking origin ends the buyer's session with a confirmed
   * purchase (Anteroom-Command: end-session), so that the slot goes to the next in line at once.
   * Default: neither.
   */
  originCommands?: boolean
  /** Seats of the demo event, in rows of ten (default 40). */
  seats?: number
  /**
   * The room is linked to the demo event (its `event` setting): the booking origin keeps the event's
   * stock in the claim gate the edge reads (the same Redis, or one gate in this process), the
   * simulator samples the gate's counts, visitors told sold_out leave, and the sold-out verdicts run.
   */
  soldOut?: boolean
  /**
   * How long a buyer takes to pay once they hold seats, sale seconds (uniform over 0.5 to 1.5 times
   * this; 0, the default: at once), and the share of holders who release their hold instead of paying.
   * Drawn from a PRNG of their own, so that other sales with the same seed keep their arrivals.
   */
  paySeconds?: number
  releaseShare?: number
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
  /**
   * A scheduled sale (curve 'scheduled'): the run starts `leadSeconds` sale s (30) before the pre-queue,
   * which lasts curve.durationSeconds until the opening.
   */
  leadSeconds?: number
  /** A bot farm: `count` clients on `networks` loopback /24s, each after up to `places` places, a join every `everySeconds` sale s (5). */
  bots?: { count: number; networks: number; places?: number; everySeconds?: number }
  /** The room's powDifficulty (0: off). */
  powDifficulty?: number
  /** The room's joinsPerNetworkPerMinute (0: off), per real minute: the edge's window is not compressed. */
  networkCap?: number
  /** With a network cap: humans per loopback /24 (default: half the cap, at least 1). */
  humansPerNetwork?: number
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
  /** What the edge logged, by event; empty for an external edge (`edgeUrl`). */
  edgeEvents: Record<string, number>
  /**
   * How holds ended: "paid", "released" (the buyer let them go), or what the confirm answered instead
   * ("confirm <status> <state or error code>"; the hold was then released, see shop()).
   */
  checkouts: Record<string, number>
  /** The store fault of the run, when it had one. */
  fault?: StoreFault
  /** The store's own record of its admissions (real ms, ascending), when the simulator could read it. */
  admissions?: number[]
  /** A scheduled sale: the draw, the joins and the bot farm. */
  scheduled?: ScheduledOutcome
  /** The places bots got, each polled like a visitor's (in the store-side verdicts, not in the waits). */
  botPlaces?: VisitorRecord[]
  /** A sold-out sale: the event's counts as the gate gave them, every 250 ms. */
  gate?: GateSample[]
  /** ... and the stock states the edge acted on (its admin stats, once a second), counted. */
  edgeStates?: Record<string, number>
}

export interface ScheduledOutcome {
  /** Real ms of the run. */
  prequeueAt: number
  opensAt: number
  /** Humans who joined the pre-queue, and who came after the opening; of those, how many had sent their first request before it. */
  prequeueHumans: number
  lateHumans: number
  lateButCameBefore: number
  /** Entrants of the published draw (humans and bot places). */
  drawn: number
  draw?: PublishedDraw
  joins: JoinRecord[]
  bots?: {
    clients: number
    networks: number
    joins: number
    places: number
    refused: number
    challenges: number
    solved: number
    solveMs: number
  }
  /** Humans' proofs of work: solves, hashes and real ms each (mean, p95). */
  humanPow?: { solves: number; meanHashes: number; meanMs: number; p95Ms: number }
  humanNetworks: number
}

const SEATS_EVENT = 'demo'

/**
 * How long the visitors' connections stay open idle: well below the servers'. workerd closes an idle
 * keep-alive connection after 5 s without saying so in a Keep-Alive header (Node's http server says
 * timeout=5), and a request sent as it closes fails on a socket the other side closed (CI, stop 22,
 * the Worker edge: one `SocketError` in a sale). Browsers retry such a request by themselves; undici
 * does not. Two seconds of margin, for a stalled machine.
 */
export const CLIENT_KEEP_ALIVE_MS = 3_000

/** One more of `key` in a count by kind. */
function tally(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1
}

/** An error's name and, for undici's, its code and message ('SocketError UND_ERR_SOCKET: other side closed'). */
function errorName(err: unknown): string {
  if (!(err instanceof Error)) return 'error'
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? `${err.name} ${code}: ${err.message.slice(0, 60)}` : err.name
}

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
    const perSecond = Math.floor(real.newUsersPerMinute / 60) + 1
    notes.push(
      `The edge paces admissions in real time: one every 60 s / ${real.newUsersPerMinute} and at most floor(${real.newUsersPerMinute} / 60) + 1 = ${perSecond} ` +
        `in any real second, i.e. in any ${fmtS(scale)} of sale time; admissions per sale minute match the setting, and the rate verdicts are checked in real time against the scaled limit.`,
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

/**
 * A scheduled sale's arrivals, sale s from the start of the run: 2% in the `lead` before the pre-queue
 * (they see the countdown), 53% evenly over the pre-queue, 35% in its last 15 s (the spike), 10% after
 * the opening (exponential, mean 30 s).
 */
export function scheduledArrivalTimes(visitors: number, prequeueSeconds: number, leadSeconds: number, random: () => number): number[] {
  const opens = leadSeconds + prequeueSeconds
  const spike = Math.min(15, prequeueSeconds)
  const out: number[] = []
  for (let i = 0; i < visitors; i++) {
    const u = random()
    if (u < 0.02) out.push(random() * leadSeconds)
    else if (u < 0.55) out.push(leadSeconds + random() * prequeueSeconds)
    else if (u < 0.9) out.push(opens - random() * spike)
    else out.push(opens - Math.log(1 - random() * 0.999) * 30)
  }
  return out.sort((a, b) => a - b)
}

/** Arrival times in sale seconds, sorted, drawn from the curve. */
export function arrivalTimes(visitors: number, curve: ArrivalCurve, random: () => number, leadSeconds = 30): number[] {
  const d = Math.max(1, curve.durationSeconds)
  if (curve.kind === 'scheduled') return scheduledArrivalTimes(visitors, d, leadSeconds, random)
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
  /** Slots the store reserves after a loss (its watch), when it says. */
  reserved?: (room: string) => Promise<number | undefined>
  /** The store's record of admissions since `sinceMs` (store ms, inclusive): member → ms. */
  admissions?: (room: string, sinceMs: number) => Promise<[string, number][]>
  /** A sold-out sale: the event's counts in the claim gate the edge reads. */
  stock?: (event: string) => Promise<StockCounts | undefined>
  /** ... and the edge's own view of them (its admin stats): the stock state it acts on. */
  edgeStock?: (room: string) => Promise<string | undefined>
  /** The Redis the simulator started, for its faults. */
  redis?: RedisHere
  /** What the edge logged, by event (store_unavailable, reload_stuck, ...): read before stop(). */
  edgeEvents?: () => Record<string, number>
  stop(): Promise<void>
  invariant?: () => Promise<BookingOutcome>
}

/** A Redis the simulator started here: what the edge is given, and the faults it can cause. */
export interface RedisHere {
  url: string
  /** FLUSHALL: the store forgets everything. */
  flush(): Promise<void>
  /** Kill redis-server and start it again, empty, on the same port; resolves once it answers. */
  restart(): Promise<void>
  /** Kill the primary of a Sentinel set; resolves once a replica answers as the primary. */
  failover?(): Promise<string>
  stop(): Promise<void>
}

/** A redis-server on a free port that can be restarted empty on the same port. */
async function redisHere(): Promise<RedisHere> {
  let server: RedisServer = await startRedis()
  const url = server.url
  const admin = connectRedis(url)
  await waitForRedis(() => admin.ping())
  return {
    url,
    async flush() {
      await admin.flushall()
    },
    async restart() {
      await server.stop()
      server = await startRedis([], server.port)
      await waitForRedis(() => admin.ping())
    },
    async stop() {
      admin.disconnect()
      await server.stop()
    },
  }
}

/**
 * A Sentinel set (a primary, a replica, three sentinels; down-after 1 s): the edge is given its
 * redis+sentinel:// URL and follows the failover; the fault kills the primary.
 */
async function sentinelHere(): Promise<RedisHere> {
  const set = await startSentinelSet()
  const client = connectRedis(set.url)
  try {
    await waitForRedis(() => client.ping())
  } catch (err) {
    client.disconnect()
    await set.stop()
    throw err
  }
  const unsupported = async () => {
    throw new Error('the failover sale kills the primary; it neither flushes nor restarts')
  }
  return {
    url: set.url,
    flush: unsupported,
    restart: unsupported,
    async failover() {
      const f = await set.killMaster()
      // The store is back when the simulator's own client (through the sentinels, as the edge) writes again.
      await waitForRedis(() => client.set('anteroom:sim:probe', '1'))
      return (
        `Primary on port ${f.oldPort} killed; the sentinels named ${f.newPort} after ${(f.sentinelsSwitchedMs / 1000).toFixed(2)} s, ` +
        `which answered as primary after ${(f.promotedMs / 1000).toFixed(2)} s.`
      )
    },
    async stop() {
      client.disconnect()
      await set.stop()
    },
  }
}

/** Retries `probe` every 20 ms until it answers (at most 30 s). */
async function waitForRedis(probe: () => Promise<unknown>): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await probe()
      return
    } catch (err) {
      if (i > 1500) throw err
      await sleep(20)
    }
  }
}

/** What the store says beside its stats: the slots it reserves after a loss (undefined when its watch does not say). */
async function reservedSlots(store: QueueStore, room: string): Promise<number | undefined> {
  const w = (await store.watch(room, Date.now() + 86_400_000)) as Partial<{ reserved: number; reservedUntil: number }>
  if (typeof w.reserved !== 'number' || typeof w.reservedUntil !== 'number') return undefined
  return w.reservedUntil > Date.now() ? w.reserved : 0
}

/**
 * The embedded store's admissions of the last minute, read from its state (the simulator runs it in this
 * process; there is no port for it): undefined if its shape is not what is expected.
 */
function memoryAdmissions(store: QueueStore): Started['admissions'] {
  type Scored = { readonly size: number; first(count: number): string[]; score(member: string): number | undefined }
  const rooms = (store as unknown as { rooms?: Map<string, { admissions?: Scored }> }).rooms
  if (!(rooms instanceof Map)) return undefined
  return async (room, sinceMs) => {
    const adm = rooms.get(room)?.admissions
    if (adm === undefined) return []
    const out: [string, number][] = []
    for (const m of adm.first(adm.size)) {
      const at = adm.score(m)
      if (at !== undefined && at >= sinceMs) out.push([m, at])
    }
    return out
  }
}

async function startStack(
  o: SimOptions,
  real: RoomLimits,
  room: string,
  schedule?: { prequeueAt: string; opensAt: string },
): Promise<Started> {
  const stops: (() => Promise<void>)[] = []
  try {
    let redisUrl: string | undefined
    let here: RedisHere | undefined
    if (o.fault?.kind === 'failover') {
      if (typeof o.redis === 'string') throw new Error('the failover sale starts its own Sentinel set (no --redis URL)')
      here = await sentinelHere()
      stops.push(() => (here as RedisHere).stop())
      redisUrl = here.url
    } else if (o.redis === true || (typeof o.redis !== 'string' && (o.runtime === 'worker' || o.fault !== undefined))) {
      here = await redisHere()
      stops.push(() => (here as RedisHere).stop())
      redisUrl = here.url
    } else if (typeof o.redis === 'string') redisUrl = o.redis
    if (o.fault !== undefined && here === undefined)
      throw new Error('a store fault needs the redis-server started by the simulator (no --redis URL)')
    const [edgePort, originPort] = [await freePort(), await freePort()]
    const edgeUrl = `http://127.0.0.1:${edgePort}`
    // A sold-out sale: the origin keeps the event's stock where the edge reads it, in the same Redis,
    // or in one gate shared in this process (as npm start does).
    const sharedGate = o.soldOut && redisUrl === undefined ? new MemoryClaimGate() : undefined
    const booking = await buildBooking({
      databaseUrl: o.databaseUrl,
      jwksUrl: `${edgeUrl}/.well-known/jwks.json`,
      issuer: 'anteroom',
      audience: 'origin',
      room,
      rows: Math.ceil((o.seats ?? 40) / 10),
      endSessionOnPurchase: o.originCommands === true,
      ...(o.soldOut ? { redisUrl, gate: sharedGate } : {}),
    })
    stops.push(() => booking.close())
    const rooms = JSON.stringify([
      {
        id: room,
        paths: ['/'],
        ...real,
        ...(o.originCommands ? { originCommands: 'end-session' } : {}),
        ...(schedule ? { schedule } : {}),
        ...(o.powDifficulty ? { powDifficulty: o.powDifficulty } : {}),
        ...(o.networkCap ? { joinsPerNetworkPerMinute: o.networkCap } : {}),
        ...(o.soldOut ? { event: SEATS_EVENT } : {}),
      },
    ])
    const secret = randomBytes(32).toString('hex')
    // A sold-out sale also reads what the edge itself sees of the stock (its admin stats).
    const adminToken = randomBytes(24).toString('base64url')
    const adminTokens = o.soldOut ? `sim:${adminToken}` : undefined
    let stats: Started['stats']
    let reserved: Started['reserved']
    let admissions: Started['admissions']
    let edgeEvents: Started['edgeEvents']
    let gate: ClaimGate | undefined = sharedGate
    if (redisUrl !== undefined) {
      // The simulator's own connection: the store's numbers and its record of admissions, beside the edge.
      const redis = connectRedis(redisUrl)
      stops.push(async () => redis.disconnect())
      const store = new RedisQueueStore(redis, luaScripts())
      if (o.soldOut) gate = new RedisClaimGate(redis, luaScripts())
      stats = (id) => store.stats(id)
      reserved = (id) => reservedSlots(store, id)
      admissions = async (id, sinceMs) => {
        const flat = await redis.zrangebyscore(roomKeys(id).admissions, sinceMs, '+inf', 'WITHSCORES')
        const out: [string, number][] = []
        for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, Number(flat[i + 1])])
        return out
      }
    }
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
          ANTEROOM_ADMIN_TOKENS: adminTokens,
        },
        port: edgePort,
      })
      stops.push(() => worker.close())
      // The Worker logs a JSON line an event (worker/edge.ts); the runtime's output keeps its last 64 KB.
      edgeEvents = () => {
        const counts: Record<string, number> = {}
        for (const line of worker.output().split('\n')) {
          const event = /^\{"event":"([a-z_]+)"/.exec(line)?.[1]
          if (event !== undefined) tally(counts, event)
        }
        return counts
      }
    } else {
      const config = loadConfig({
        ANTEROOM_ROOMS: rooms,
        ANTEROOM_QUEUE_SECRET: secret,
        ANTEROOM_REDIS_URL: redisUrl,
        ANTEROOM_ADMIN_TOKENS: adminTokens,
      })
      const counts: Record<string, number> = {}
      edgeEvents = () => ({ ...counts })
      const edge = await buildEdge(config, {
        originUrl: `http://127.0.0.1:${originPort}`,
        gate: sharedGate,
        log: (event) => tally(counts, event),
      })
      stops.push(() => edge.close())
      const server = serve({ fetch: edge.app.fetch, hostname: '127.0.0.1', port: edgePort })
      stops.push(() => new Promise((r) => server.close(() => r())))
      await new Promise((r) => (server.listening ? r(null) : server.once('listening', r)))
      if (redisUrl === undefined) {
        const queue = edge.deps.queue
        stats = (id) => queue.stats(id)
        reserved = (id) => reservedSlots(queue, id)
        admissions = memoryAdmissions(queue)
      }
    }
    const origin = serve({ fetch: booking.app.fetch, hostname: '127.0.0.1', port: originPort })
    stops.push(() => new Promise((r) => origin.close(() => r())))
    await new Promise((r) => (origin.listening ? r(null) : origin.once('listening', r)))
    const stockGate = gate
    return {
      edgeUrl,
      stats,
      reserved,
      admissions,
      stock: stockGate === undefined ? undefined : (event) => stockGate.counts(event),
      edgeStock: o.soldOut
        ? async (id) => {
            const res = await request(`${edgeUrl}/_anteroom/api/rooms/${id}/stats`, { headers: { authorization: `Bearer ${adminToken}` } })
            const body = (await res.body.json()) as { stock?: { state?: string } | null }
            return body.stock?.state
          }
        : undefined,
      redis: here,
      edgeEvents,
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
  /** The client's own connections (its loopback address, i.e. its network); default: the simulator's. */
  agent?: Agent
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
  return tokenNumber(token, 3)
}

/** The expiry (ms, the edge's clock) in a queue token's text, if it has one. */
export function tokenExpiry(token: string | undefined): number | undefined {
  return tokenNumber(token, 4)
}

/** A base-36 field of a queue token's text (q1.room.visitor.arrival.expiry.mac). */
function tokenNumber(token: string | undefined, field: 3 | 4): number | undefined {
  if (token === undefined) return undefined
  const parts = decodeURIComponent(token).split('.')
  if (parts[0] !== 'q1' || parts.length < 6) return undefined
  const n = Number.parseInt(parts[field] as string, 36)
  return Number.isFinite(n) ? n : undefined
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

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
function humanAddress(n: number): string {
  return `127.${1 + Math.floor(n / 256)}.${n % 256}.1`
}

export async function simulate(o: SimOptions): Promise<SimResult> {
  const room = o.room ?? 'demo'
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
    : await startStack(o, real, room, schedule)
  if (scheduled) {
    if (Date.now() > saleZeroWall)
      log(`  the edge took ${((Date.now() - saleZeroWall) / 1000).toFixed(1)} s longer to start than allowed: the sale starts late`)
    await sleep(saleZeroWall - Date.now())
  }
  const agent = new Agent({ connections: o.connections ?? 64, keepAliveTimeout: CLIENT_KEEP_ALIVE_MS })
  // With a network cap, humans come from their own /24s, a few each (the cap counts per network).
  const cap = o.networkCap ?? 0
  const perNetwork = Math.max(1, o.humansPerNetwork ?? Math.floor(cap / 2))
  const humanAgents =
    cap > 0
      ? Array.from(
          { length: Math.ceil(o.visitors / perNetwork) },
          (_, n) => new Agent({ connections: 2, keepAliveTimeout: CLIENT_KEEP_ALIVE_MS, localAddress: humanAddress(n) }),
        )
      : []
  let requests = 0
  let errors = 0
  const errorKinds: Record<string, number> = {}
  const checkouts: Record<string, number> = {}
  const checkout = (kind: string) => {
    tally(checkouts, kind)
  }
  const failed = (kind: string) => {
    errors++
    tally(errorKinds, kind)
  }
  const t0 = performance.now()
  const now = () => performance.now() - t0
  // Store times (ms on the wall clock, Redis TIME on this host) to run time.
  const wallAtZero = Date.now() - now()
  const sessionMs = real.sessionDurationSeconds * 1000
  const admissionCookie = `anteroom_a_${room}`
  const queueCookie = `anteroom_q_${room}`

  async function browse(v: VisitorRecord, jar: Jar, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const sent = now()
    const before = jar.cookies.get(admissionCookie)
    try {
      return await call(jar, method, path, body, headers)
    } finally {
      v.lastActivityReceived = now()
      // A new admission cookie: the session was renewed (past half of it, or re-registered after a loss).
      const after = jar.cookies.get(admissionCookie)
      if (after !== undefined && after !== before) v.sessionEnd = Math.max(v.sessionEnd ?? 0, sent + sessionMs)
      // A session from before the fault, used after it: the edge should re-register it (once).
      if (
        fault !== undefined &&
        fault.end > fault.start &&
        sent > fault.end &&
        (v.admittedReceived ?? Number.POSITIVE_INFINITY) < fault.start
      ) {
        const renewed = usedAfterFault.get(v.id)
        if (renewed === undefined) fault.browsingAfter++
        if (renewed !== true && after !== undefined && after !== before) fault.reregistered++
        usedAfterFault.set(v.id, renewed === true || (after !== undefined && after !== before))
      }
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
      dispatcher: jar.agent ?? agent,
    })
    absorb(jar, res.headers['set-cookie'])
    const text = await res.body.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    const retryAfter = res.headers['retry-after']
    return {
      status: res.statusCode,
      json: json as Record<string, unknown> | undefined,
      retryAfter: retryAfter === undefined ? undefined : Number(retryAfter),
    }
  }

  const arrivals = arrivalTimes(o.visitors, o.curve, random, leadSeconds)
  // Paying and releasing draw from their own PRNG: a sale without them keeps its arrivals.
  const paying = rng(o.seed ^ 0x5eed5)
  const visitors: VisitorRecord[] = arrivals.map((_, id) => ({ id, arrivedAt: 0, abandoned: false, tickets: [] }))
  // A scheduled sale's times in run ms (the sale's zero is `leadSeconds` before the pre-queue).
  const prequeueAtRun = prequeueWall - wallAtZero
  const opensAtRun = opensWall - wallAtZero
  const plans = arrivals.map((at, i) => ({
    at: scheduled ? prequeueAtRun + ((at - leadSeconds) / o.scale) * 1000 : (at / o.scale) * 1000,
    /** Where this visitor's requests come from (a network of their own with a cap). */
    agent: humanAgents[Math.floor(i / perNetwork)] as Agent | undefined,
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
  const deadline = (o.maxRealSeconds ?? 300) * 1000
  const samples: StoreSample[] = []
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      const a = now()
      try {
        let s: { waiting: number; active: number; admittedLastMinute: number } | undefined
        let reserved: number | undefined
        if (stack.stats) {
          s = await stack.stats(room)
          reserved = await stack.reserved?.(room)
        } else if (o.adminToken) {
          const res = await request(`${stack.edgeUrl}/_anteroom/api/rooms/${room}/stats`, {
            headers: { authorization: `Bearer ${o.adminToken}` },
            dispatcher: agent,
          })
          const j = (await res.body.json()) as { waiting: number; active: number; admittedLastMinute: number }
          if (res.statusCode === 200) s = j
        }
        if (s) {
          const sample: StoreSample = { t: (a + now()) / 2, waiting: s.waiting, active: s.active, admittedLastMinute: s.admittedLastMinute }
          if (reserved !== undefined) sample.reserved = reserved
          samples.push(sample)
        }
      } catch {
        // A missed sample is only a gap in the chart.
      }
      await sleep(250)
    }
  })()

  // A sold-out sale: the event's counts in the claim gate, as the edges read them, every 250 ms.
  const gateSamples: GateSample[] = []
  const gateSampler = (async () => {
    if (!o.soldOut || !stack.stock) return
    while (sampling) {
      const a = now()
      try {
        const c = await stack.stock(SEATS_EVENT)
        gateSamples.push(c === undefined ? { t: (a + now()) / 2 } : { t: (a + now()) / 2, free: c.free, held: c.held, sold: c.sold })
      } catch {
        gateSamples.push({ t: (a + now()) / 2 })
      }
      await sleep(250)
    }
  })()
  // What the edge acts on, once a second (its admin stats): how often it knew the counts.
  const edgeStates: Record<string, number> = {}
  const edgeSampler = (async () => {
    if (!o.soldOut || !stack.edgeStock) return
    while (sampling) {
      let state: string
      try {
        state = (await stack.edgeStock(room)) ?? 'not linked'
      } catch {
        state = 'stats failed'
      }
      tally(edgeStates, state)
      await sleep(1000)
    }
  })()

  // The store's record of its admissions, read twice a second (it keeps a minute) and before a fault.
  const recorded = new Map<string, number>()
  let recordFrom = 0
  async function collect() {
    if (!stack.admissions) return
    try {
      for (const [member, at] of await stack.admissions(room, recordFrom)) {
        recorded.set(member, at)
        if (at > recordFrom) recordFrom = at
      }
    } catch {
      // The store is away: what it recorded meanwhile is read next time (or lost with it).
    }
  }
  const collector = (async () => {
    while (sampling) {
      await collect()
      await sleep(500)
    }
  })()

  // The fault, mid-sale: the visitors' polls are sorted by it into before and after (verdicts.ts).
  let fault: StoreFault | undefined
  let faultStarted = false
  /** Visitors admitted before the fault who made a request after it: whether a renewal came back yet. */
  const usedAfterFault = new Map<number, boolean>()
  const faultAtMs = o.fault === undefined ? 0 : ((o.fault.atSeconds ?? o.curve.durationSeconds / 2) / o.scale) * 1000
  const faultDone = (async () => {
    if (o.fault === undefined || stack.redis === undefined) return
    const redis = stack.redis
    const kind = o.fault.kind
    await sleep(faultAtMs - now())
    await collect()
    const start = now()
    faultStarted = true
    fault = { kind, start, end: start, busy: 0, reregistered: 0, browsingAfter: 0 }
    let note: string | undefined
    if (kind === 'flush') await redis.flush()
    else if (kind === 'restart') await redis.restart()
    else {
      if (redis.failover === undefined) throw new Error('a failover needs the Sentinel set')
      note = await redis.failover()
    }
    fault.end = now()
    if (note !== undefined) fault.note = note
    log(`  ${(start / 1000).toFixed(1)} s: ${kind}; the store answered again after ${((fault.end - start) / 1000).toFixed(2)} s`)
  })()

  let lastAdmittedJar: Jar | undefined
  let observedRefresh: number | undefined
  /** Every join: a request without a queue token that could take a place (past the proof of work, if asked). */
  const joins: JoinRecord[] = []
  async function visit(v: VisitorRecord, plan: (typeof plans)[number], given?: Jar) {
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
        // A join: no cookie of the edge's, or a queue token that had lapsed by the time the answer came
        // (its expiry, on the edge's clock, is the last poll plus abandonAfter): the edge then sees a
        // newcomer. In a sale compressed 30 times abandonAfter is a few real seconds, and an edge slowed
        // by an opening's burst lets some tokens lapse.
        const unadmitted = !jar.cookies.has(admissionCookie)
        const lapsed = held !== undefined && unadmitted && (tokenExpiry(held) ?? Number.POSITIVE_INFINITY) <= Date.now()
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
        if (typeof r.json?.refreshSeconds === 'number') observedRefresh = r.json.refreshSeconds
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
          if (!faultStarted) v.lastQueuedBeforeFault = sent
          else if (fault !== undefined && fault.end > fault.start && sent > fault.end) v.lastQueuedAfterFault = sent
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
            if (fault === undefined) failed('poll 200 recovering (no fault)')
            else fault.recovering = [fault.recovering?.[0] ?? received, received]
          }
        } else if (r.status === 429 && joining && (r.json?.error as { code?: unknown } | undefined)?.code === 'ERR_TOO_MANY_JOINS') {
          // Over the network cap: try again when the edge says.
          v.refusedJoins = (v.refusedJoins ?? 0) + 1
          if (r.retryAfter !== undefined && Number.isFinite(r.retryAfter)) pollAfter = r.retryAfter
        } else if (state !== 'scheduled') {
          if (fault !== undefined && r.status === 503 && state === 'busy') fault.busy++
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
    lastAdmittedJar = jar
    // Admitted: look at the seat map and maybe buy one or two seats, then browse a while.
    try {
      await shop(v, jar, plan)
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

  async function shop(v: VisitorRecord, jar: Jar, plan: (typeof plans)[number]) {
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
      // The buyer takes a while to pay (the seats are held meanwhile), or lets the seats go. The
      // checkout page looks at the stock every refresh meanwhile, which renews the session past its half.
      const payUntil = now() + plan.payMs
      while (now() < payUntil) {
        await sleep(Math.min(real.refreshSeconds * 1000, payUntil - now()))
        if (now() < payUntil) await browse(v, jar, 'GET', `/events/${SEATS_EVENT}/stock`)
      }
      if (plan.releases) {
        await browse(v, jar, 'DELETE', `/holds/${id}`)
        v.releasedHold = true
        checkout('released')
        return
      }
      const sent = now()
      const paid = await browse(v, jar, 'POST', `/holds/${id}/confirm`, undefined, { 'idempotency-key': `sim-${o.seed}-${v.id}-${id}` })
      const tickets = paid.json?.tickets as { seat: string }[] | undefined
      if (paid.status === 200 && Array.isArray(tickets)) {
        v.tickets = tickets.map((t) => t.seat)
        v.boughtAt = now()
        checkout('paid')
        // The edge cleared the admission cookie: the origin ended the session (Anteroom-Command).
        if (!jar.cookies.has(admissionCookie)) v.sessionEndedAt = sent
      } else {
        const why = paid.json?.state ?? (paid.json?.error as { code?: unknown } | undefined)?.code ?? ''
        checkout(`confirm ${paid.status} ${String(why)}`.trim())
        // The hold would lapse after its length, which the run does not compress (10 real minutes by
        // default): the buyer's page lets it go instead, so that its seats come back within the run.
        const gone = await browse(v, jar, 'DELETE', `/holds/${id}`).catch(() => undefined)
        // Without a session the release does not reach the origin either: the hold lapses on its own.
        if (gone?.status !== 200 || gone.json?.state !== undefined) checkout('hold left to lapse')
      }
      return
    }
  }

  // The bot farm: clients on a few /24s of their own (127.0.1.0/24, 127.0.2.0/24, ...), one address each,
  // each joining every few sale seconds, without cookies, after as many places as it can take.
  const botPlaces: VisitorRecord[] = []
  const botTasks: Promise<void>[] = []
  const botAgents: Agent[] = []
  const botStats = { joins: 0, places: 0, refused: 0, challenges: 0, solved: 0, solveMs: 0 }
  async function bot(b: number, farm: NonNullable<SimOptions['bots']>) {
    const k = b % farm.networks
    const a = new Agent({
      connections: 4,
      keepAliveTimeout: CLIENT_KEEP_ALIVE_MS,
      localAddress: `127.0.${k + 1}.${Math.floor(b / farm.networks) + 1}`,
    })
    botAgents.push(a)
    const network = `127.0.${k + 1}.0/24`
    const every = ((farm.everySeconds ?? 5) / o.scale) * 1000
    const first = scheduled ? prequeueAtRun : 0
    const last = scheduled ? opensAtRun : (o.curve.durationSeconds / o.scale) * 1000
    // Each starts in the first half of the pre-queue (of the arrivals) and stops a sale minute after its end.
    await sleep(first + (random() * (last - first)) / 2 - now())
    const url = `/_anteroom/status?room=${room}`
    for (let mine = 0; mine < (farm.places ?? 50) && now() < last + (60 / o.scale) * 1000 && now() < deadline; ) {
      const jar: Jar = { cookies: new Map(), agent: a }
      try {
        const headers: Record<string, string> = {}
        if (o.powDifficulty) {
          const c = await call(jar, 'GET', url)
          const ch = c.json?.challenge as { value?: unknown; difficulty?: unknown } | undefined
          if (typeof ch?.value === 'string' && typeof ch.difficulty === 'number') {
            botStats.challenges++
            const t = performance.now()
            // The reference solver, one hash at a time (node:crypto, as a bot's own machine would).
            headers['anteroom-pow'] = await solveChallenge(ch.value, ch.difficulty, nodeDigest)
            botStats.solveMs += performance.now() - t
            botStats.solved++
          }
        }
        const sent = now()
        const sentWall = Date.now()
        const r = await call(jar, 'GET', url, undefined, headers)
        const state = r.json?.state
        if (state !== 'scheduled') {
          const place = state === 'prequeue' || state === 'queued' || state === 'admitted'
          const rec: JoinRecord = { network, bot: true, sent: sentWall, received: Date.now(), status: r.status, place }
          if (r.status === 429) {
            rec.retryAfter = Number.isFinite(r.retryAfter)
            botStats.refused++
          }
          joins.push(rec)
          botStats.joins++
          if (place) {
            mine++
            botStats.places++
            const v: VisitorRecord = { id: 1_000_000 + botPlaces.length, arrivedAt: 0, abandoned: false, tickets: [], bot: true }
            if (typeof r.json?.ticket === 'string') v.ticket = r.json.ticket
            if (state === 'prequeue' && v.ticket !== undefined) {
              v.joinedAt = sent
              v.prequeueTickets = [v.ticket]
            }
            botPlaces.push(v)
            // The place is kept: polled as the page would, until admitted.
            const plan = {
              at: now(),
              agent: a,
              network,
              bot: true,
              quits: false,
              patienceMs: 0,
              buys: false,
              browseMs: 0,
              jitter: random,
              payMs: 0,
              releases: false,
            }
            botTasks.push(visit(v, plan, jar))
          }
        }
      } catch (err) {
        failed(`bot request failed: ${errorName(err)}`)
      }
      await sleep(every * (0.9 + 0.2 * random()))
    }
  }

  // The draw: its commitment during the pre-queue, and after the sale every page of it.
  let commitmentBefore: string | undefined
  const drawPeek = (async () => {
    if (!scheduled) return
    await sleep((prequeueAtRun + opensAtRun) / 2 - now())
    try {
      const d = await call({ cookies: new Map() }, 'GET', `/_anteroom/draw?room=${room}`)
      if (typeof d.json?.commitment === 'string') commitmentBefore = d.json.commitment
    } catch {
      // No commitment seen: the verdict then checks the seed against the one published after.
    }
  })()
  async function publishedDraw(): Promise<PublishedDraw | undefined> {
    const pages: Record<string, unknown>[] = []
    for (let offset = 0; ; ) {
      const r = await call({ cookies: new Map() }, 'GET', `/_anteroom/draw?room=${room}&offset=${offset}&limit=1000`)
      if (r.status !== 200 || r.json === undefined) return undefined
      pages.push(r.json)
      const list = (r.json.draw as unknown[] | undefined) ?? []
      offset += list.length
      if (r.json.state !== 'drawn' || list.length === 0 || offset >= Number(r.json.entrants)) break
    }
    return { ...pages[0], draw: pages.flatMap((p) => (p.draw as PublishedDraw['draw'] | undefined) ?? []) } as PublishedDraw
  }
  let draw: PublishedDraw | undefined

  let booking: BookingOutcome
  let edgeEvents: Record<string, number> = {}
  let realSeconds: number
  try {
    log(
      `simulate: ${o.visitors} visitors, ${o.curve.kind}, scale ${o.scale}x, edge ${stack.edgeUrl}${o.fault ? `, ${o.fault.kind} at ${(faultAtMs / 1000).toFixed(1)} s` : ''}`,
    )
    const progress = setInterval(() => {
      const admitted = visitors.filter((v) => v.admittedReceived !== undefined).length
      const gone = visitors.filter((v) => v.abandoned).length
      log(`  ${(now() / 1000).toFixed(0)} s: admitted ${admitted}, gave up ${gone}, requests ${requests}`)
    }, 5000)
    const farm = o.bots && o.bots.count > 0 ? o.bots : undefined
    const bots = Array.from({ length: farm?.count ?? 0 }, (_, b) => bot(b, farm!))
    await Promise.all([...visitors.map((v, i) => visit(v, plans[i]!)), faultDone, drawPeek, ...bots])
    await Promise.all(botTasks)
    clearInterval(progress)
    realSeconds = now() / 1000
    sampling = false
    await sampler
    await gateSampler
    await edgeSampler
    await collector
    await collect()
    if (stack.invariant) booking = await stack.invariant()
    else booking = await remoteInvariant(lastAdmittedJar)
    if (scheduled) draw = await publishedDraw()
  } finally {
    sampling = false
    await agent.close().catch(() => {})
    for (const a of [...humanAgents, ...botAgents]) await a.close().catch(() => {})
    edgeEvents = stack.edgeEvents?.() ?? {}
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
    ...(fault ? [placesVerdict(visitors, abandonAfterMs, fault), recoveryVerdict(fault, admissions, recovery, o.scale)] : []),
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
      humanNetworks: humanAgents.length || 1,
    }
    if (o.bots && o.bots.count > 0) scheduledOutcome.bots = { clients: o.bots.count, networks: o.bots.networks, ...botStats }
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
    edgeEvents,
    checkouts,
    fault,
    admissions,
    ...(scheduledOutcome ? { scheduled: scheduledOutcome } : {}),
    ...(botPlaces.length > 0 ? { botPlaces } : {}),
    ...(o.soldOut ? { gate: gateSamples, edgeStates } : {}),
  }
}

/** scripts/verify-draw.mjs, the shipped independent check, on the draw as published (saved to a file). */
function verifyDrawScript(d: PublishedDraw): Promise<{ ok: boolean; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'anteroom-sim-draw-'))
  const file = join(dir, 'draw.json')
  writeFileSync(file, JSON.stringify(d))
  const script = fileURLToPath(new URL('../scripts/verify-draw.mjs', import.meta.url))
  return new Promise((done) =>
    execFile(process.execPath, [script, file], (err, _stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true })
      done({ ok: err === null, output: stderr.trim().split('\n')[0] ?? '' })
    }),
  )
}
