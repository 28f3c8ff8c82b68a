// A sale's options and result, how its settings are scaled to real time, its arrivals, and the small
// helpers every part of a run uses (sim/simulate.ts runs it; sim/sale/*.ts are its parts).
import type { ArrivalCurve, Prediction, RoomLimits } from '../predict.js'
import type { BookingOutcome, GateSample, JoinRecord, PublishedDraw, StoreFault, StoreSample, Verdict, VisitorRecord } from '../verdicts.js'

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

export const SEATS_EVENT = 'demo'

/**
 * How long the visitors' connections stay open idle: well below the servers'. workerd closes an idle
 * keep-alive connection after 5 s without saying so in a Keep-Alive header (Node's http server says
 * timeout=5), and a request sent as it closes fails on a socket the other side closed (CI, stop 22,
 * the Worker edge: one `SocketError` in a sale). Browsers retry such a request by themselves; undici
 * does not. Two seconds of margin, for a stalled machine.
 */
export const CLIENT_KEEP_ALIVE_MS = 3_000

/** One more of `key` in a count by kind. */
export function tally(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1
}

/** An error's name and, for undici's, its code and message ('SocketError UND_ERR_SOCKET: other side closed'). */
export function errorName(err: unknown): string {
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

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)))
