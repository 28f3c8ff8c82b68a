// The what-if model: a deterministic discrete-time model of the edge's FIFO admission, to predict queue
// length and waits before a sale. One step per second of sale time by default (finer with stepSeconds,
// for a compressed run in real time). Each step, as the store does (src/core/admission.ts):
// sessions that ran out free their slots; then the head of the line is admitted, as many as
//   grantBudget: min(free slots, what the pace (dueAdmissions) made due, ⌊n/60⌋ + 1 − admitted in the last second)
// allow. Arrivals are fluid (fractions of visitors are fine). A share of each arrival cohort gives up
// after `patienceSeconds`; the store drops them abandonAfter later; if they reach the head before that,
// they are granted and hold the slot until the drop time instead of a whole session.

import { dueAdmissions, grantBudget, paceAfter } from '../src/core/admission.js'

export interface ArrivalCurve {
  /** 'scheduled': a pre-queue of durationSeconds; the model lets everyone in line at once at the opening, as 'opening'. */
  kind: 'opening' | 'ramp' | 'waves' | 'scheduled'
  /** Seconds of sale time over which visitors arrive (ignored for 'opening'; the pre-queue for 'scheduled'). */
  durationSeconds: number
  /** Number of waves for 'waves'. */
  waves?: number
}

export interface RoomLimits {
  totalActiveUsers: number
  newUsersPerMinute: number
  sessionDurationSeconds: number
  refreshSeconds: number
  abandonAfterSeconds: number
}

export interface PredictInput {
  visitors: number
  curve: ArrivalCurve
  limits: RoomLimits
  /** Share of visitors who give up while waiting, 0..1. */
  abandonShare: number
  /** How long those wait before giving up, seconds. */
  patienceSeconds: number
  /** Stop after this many seconds of sale time. */
  horizonSeconds?: number
  /** Width of the arrival bins of waitByArrivalMinute, seconds (60: minutes). */
  binSeconds?: number
  /** Length of one model step, seconds (1), as a whole fraction of a second (0.1, 0.5; others are rounded to one). A compressed run's real-time limits want 0.1. */
  stepSeconds?: number
  /**
   * A granted visitor sees the admission at their next poll: waits then include a delay spread evenly
   * over [0, pickupSeconds) (the refresh interval). 0: waits end at the grant.
   */
  pickupSeconds?: number
}

export interface Prediction {
  /** Per second: queue length (incl. givers-up not yet dropped), active sessions, admitted that second. */
  queue: number[]
  active: number[]
  admitted: number[]
  /** Per arrival bin (a minute unless binSeconds says otherwise): mean wait of those admitted (givers-up count if admitted before giving up), seconds until the page sees the admission (the grant when pickupSeconds is 0). */
  waitByArrivalMinute: { minute: number; meanWait: number; maxWait: number }[]
  p50: number
  p95: number
  p99: number
  maxQueue: number
  /** Second at which the last patient visitor was admitted (or undefined within the horizon). */
  drainedAt: number | undefined
  admittedTotal: number
}

/** Arrivals per second of sale time, summing to `visitors`. */
export function arrivalsPerSecond(visitors: number, curve: ArrivalCurve): number[] {
  const d = Math.max(1, Math.round(curve.durationSeconds))
  if (curve.kind === 'opening' || curve.kind === 'scheduled') return [visitors]
  if (curve.kind === 'ramp') {
    // Linearly rising rate: weight of second i is (i + 0.5).
    const total = (d * d) / 2
    return Array.from({ length: d }, (_, i) => (visitors * (i + 0.5)) / total)
  }
  // Waves: equal bursts, each spread over the first tenth of its period.
  const waves = Math.max(1, curve.waves ?? 3)
  const period = d / waves
  const out = new Array<number>(d).fill(0)
  for (let w = 0; w < waves; w++) {
    const start = Math.floor(w * period)
    const len = Math.max(1, Math.floor(period / 10))
    for (let i = 0; i < len && start + i < d; i++) out[start + i]! += visitors / waves / len
  }
  return out
}

interface Cohort {
  arrivedAt: number
  patient: number
  quitters: number
}

export function predict(input: PredictInput): Prediction {
  const { limits } = input
  const perSecond = arrivalsPerSecond(input.visitors, input.curve)
  // Time runs in ticks of stepSeconds; every window, duration and output is converted from seconds.
  const k = Math.max(1, Math.round(1 / (input.stepSeconds ?? 1)))
  const ticks = (seconds: number) => Math.round(seconds * k)
  const horizon = ticks(input.horizonSeconds ?? 6 * 3600)
  const arrivalTicks = perSecond.length * k
  const n = limits.newUsersPerMinute
  const window1 = ticks(1)
  const sessionTicks = ticks(limits.sessionDurationSeconds)
  const patienceTicks = ticks(input.patienceSeconds)
  const quitAfterTicks = ticks(input.patienceSeconds + limits.abandonAfterSeconds)
  const EPS = 1e-9
  // Every cohort in arrival order: `head` is the front of the line, `dropped` the next whose givers-up are still in it.
  const cohorts: Cohort[] = []
  let head = 0
  let dropped = 0
  let queued = 0
  const sessionsEnding = new Map<number, number>() // tick -> slots freed then
  let active = 0
  const admittedAt: number[] = [] // per tick
  // Granted in the last second's earlier ticks, and the pace (when the next admission is due, µs).
  let inSecond = 0
  let tatUs: number | undefined
  let grantedThisSecond = 0
  const queue: number[] = []
  const activeOut: number[] = []
  const admittedOut: number[] = []
  const waits: { wait: number; count: number; minute: number }[] = []
  let drainedAt: number | undefined
  let patientLeft = input.visitors * (1 - input.abandonShare)
  const bin = input.binSeconds ?? 60
  const pickup = input.pickupSeconds ?? 0
  const PICKUP_PARTS = pickup > 0 ? 10 : 1
  /**
   * Records `count` visitors granted at tick t after `wait` seconds. Each sees it at their next poll,
   * and their session (as in poll-12.lua) runs from that poll: the slot is held for the pickup too.
   */
  const admit = (t: number, wait: number, count: number, minute: number) => {
    for (let j = 0; j < PICKUP_PARTS; j++) {
      const delay = (pickup * (j + 0.5)) / PICKUP_PARTS
      waits.push({ wait: wait + delay, count: count / PICKUP_PARTS, minute })
      const end = t + sessionTicks + ticks(delay)
      sessionsEnding.set(end, (sessionsEnding.get(end) ?? 0) + count / PICKUP_PARTS)
    }
  }
  for (let t = 0; t < horizon; t++) {
    const second = Math.floor(t / k)
    // Arrivals: a second's share spread over its ticks (an opening arrives all at once).
    const a =
      input.curve.kind === 'opening' || input.curve.kind === 'scheduled'
        ? t === 0
          ? (perSecond[0] ?? 0)
          : 0
        : t < arrivalTicks
          ? (perSecond[second] ?? 0) / k
          : 0
    if (a > 0) {
      cohorts.push({ arrivedAt: t, patient: a * (1 - input.abandonShare), quitters: a * input.abandonShare })
      queued += a
    }
    active -= sessionsEnding.get(t) ?? 0
    sessionsEnding.delete(t)
    // Givers-up are dropped abandonAfter after their last poll.
    while (dropped < cohorts.length && t - cohorts[dropped]!.arrivedAt >= quitAfterTicks) {
      queued -= cohorts[dropped]!.quitters
      cohorts[dropped]!.quitters = 0
      dropped++
    }
    if (t > 0) {
      inSecond += admittedAt[t - 1] ?? 0
      if (t - window1 >= 0) inSecond -= admittedAt[t - window1] ?? 0
    }
    const pace = dueAdmissions(tatUs, (t * 1_000_000) / k, n)
    let budget = Math.max(
      0,
      grantBudget({ totalActiveUsers: limits.totalActiveUsers, newUsersPerMinute: n, active, due: pace.due, admittedLastSecond: inSecond }),
    )
    budget = Math.floor(budget + EPS)
    let granted = 0
    while (budget > EPS && head < cohorts.length) {
      const c = cohorts[head]!
      const size = c.patient + c.quitters
      if (size <= EPS) {
        head++
        continue
      }
      const take = Math.min(size, budget)
      const share = take / size
      const p = c.patient * share
      const q = c.quitters * share
      const wait = (t - c.arrivedAt) / k
      const minute = Math.floor(c.arrivedAt / k / bin)
      if (p > 0) {
        admit(t, wait, p, minute)
        patientLeft -= p
      }
      if (q > 0 && t - c.arrivedAt < patienceTicks) {
        // Reached the head before giving up: an ordinary admission.
        admit(t, wait, q, minute)
      } else if (q > 0) {
        // Granted after giving up, while away: the slot comes back at the drop time.
        const end = Math.max(t + 1, c.arrivedAt + quitAfterTicks)
        sessionsEnding.set(end, (sessionsEnding.get(end) ?? 0) + q)
      }
      c.patient -= p
      c.quitters -= q
      queued -= take
      active += take
      granted += take
      budget -= take
      if (c.patient + c.quitters <= EPS) head++
    }
    admittedAt[t] = granted
    tatUs = paceAfter(tatUs, pace, granted, n)
    grantedThisSecond += granted
    if (drainedAt === undefined && patientLeft <= 1e-6 && t >= arrivalTicks - 1) drainedAt = second
    // The outputs are per second: the state at the end of each second, and what it granted.
    if ((t + 1) % k === 0) {
      queue.push(Math.max(0, queued))
      activeOut.push(active)
      admittedOut.push(grantedThisSecond)
      grantedThisSecond = 0
      // active is a running float total: stop once what is left is rounding.
      if (drainedAt !== undefined && active <= 1e-6 && second > perSecond.length) break
    }
  }
  waits.sort((x, y) => x.wait - y.wait)
  const total = waits.reduce((s, w) => s + w.count, 0)
  const pct = (p: number) => {
    let acc = 0
    for (const w of waits) {
      acc += w.count
      if (acc >= (p / 100) * total - 1e-9) return w.wait
    }
    return Number.NaN
  }
  const byMinute = new Map<number, { sum: number; count: number; max: number }>()
  for (const w of waits) {
    const m = byMinute.get(w.minute) ?? { sum: 0, count: 0, max: 0 }
    m.sum += w.wait * w.count
    m.count += w.count
    m.max = Math.max(m.max, w.wait)
    byMinute.set(w.minute, m)
  }
  return {
    queue,
    active: activeOut,
    admitted: admittedOut,
    waitByArrivalMinute: [...byMinute]
      .sort((x, y) => x[0] - y[0])
      .map(([minute, m]) => ({ minute, meanWait: m.sum / m.count, maxWait: m.max })),
    p50: pct(50),
    p95: pct(95),
    p99: pct(99),
    maxQueue: queue.reduce((m, x) => Math.max(m, x), 0),
    drainedAt,
    admittedTotal: total,
  }
}
