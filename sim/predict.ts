// The what-if model: a deterministic discrete-time model of the edge's FIFO admission, to predict queue
// length and waits before a sale. One step per second of sale time. Each step, as poll-7.lua does:
// sessions that ran out free their slots; then the head of the line is admitted, as many as
//   min(totalActiveUsers - active, newUsersPerMinute - admitted in (t-60, t], ceil(n/6) - admitted in (t-10, t])
// allow. Arrivals are fluid (fractions of visitors are fine). A share of each arrival cohort gives up
// after `patienceSeconds`; the store drops them abandonAfter later; if they reach the head before that,
// they are granted and hold the slot until the drop time instead of a whole session.

export interface ArrivalCurve {
  kind: 'opening' | 'ramp' | 'waves'
  /** Seconds of sale time over which visitors arrive (ignored for 'opening'). */
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
}

export interface Prediction {
  /** Per second: queue length (incl. givers-up not yet dropped), active sessions, admitted that second. */
  queue: number[]
  active: number[]
  admitted: number[]
  /** Per arrival bin (a minute unless binSeconds says otherwise): mean wait of those admitted (givers-up count if admitted before giving up), seconds to the grant. */
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
  if (curve.kind === 'opening') return [visitors]
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
  const arrivals = arrivalsPerSecond(input.visitors, input.curve)
  const horizon = input.horizonSeconds ?? 6 * 3600
  const n = limits.newUsersPerMinute
  const per10 = Math.ceil(n / 6)
  const EPS = 1e-9
  const line: Cohort[] = []
  const sessionsEnding = new Map<number, number>() // second -> slots freed then
  let active = 0
  const admittedAt: number[] = []
  const queue: number[] = []
  const activeOut: number[] = []
  const waits: { wait: number; count: number; minute: number }[] = []
  let drainedAt: number | undefined
  let patientLeft = input.visitors * (1 - input.abandonShare)
  const quitAfter = input.patienceSeconds + limits.abandonAfterSeconds
  const bin = input.binSeconds ?? 60
  for (let t = 0; t < horizon; t++) {
    const a = arrivals[t] ?? 0
    if (a > 0) line.push({ arrivedAt: t, patient: a * (1 - input.abandonShare), quitters: a * input.abandonShare })
    active -= sessionsEnding.get(t) ?? 0
    sessionsEnding.delete(t)
    // Givers-up are dropped abandonAfter after their last poll.
    for (const c of line) if (t - c.arrivedAt >= quitAfter) c.quitters = 0
    let inMinute = 0
    let in10 = 0
    for (let k = Math.max(0, t - 59); k < t; k++) inMinute += admittedAt[k] ?? 0
    for (let k = Math.max(0, t - 9); k < t; k++) in10 += admittedAt[k] ?? 0
    let budget = Math.max(0, Math.min(limits.totalActiveUsers - active, n - inMinute, per10 - in10))
    budget = Math.floor(budget + EPS)
    let granted = 0
    while (budget > EPS && line.length > 0) {
      const c = line[0]!
      const size = c.patient + c.quitters
      const take = Math.min(size, budget)
      const share = size > 0 ? take / size : 0
      const p = c.patient * share
      const q = c.quitters * share
      if (p > 0) {
        waits.push({ wait: t - c.arrivedAt, count: p, minute: Math.floor(c.arrivedAt / bin) })
        patientLeft -= p
        const end = t + limits.sessionDurationSeconds
        sessionsEnding.set(end, (sessionsEnding.get(end) ?? 0) + p)
      }
      if (q > 0 && t - c.arrivedAt < input.patienceSeconds) {
        // Reached the head before giving up: an ordinary admission.
        waits.push({ wait: t - c.arrivedAt, count: q, minute: Math.floor(c.arrivedAt / bin) })
        const end = t + limits.sessionDurationSeconds
        sessionsEnding.set(end, (sessionsEnding.get(end) ?? 0) + q)
      } else if (q > 0) {
        // Granted after giving up, while away: the slot comes back at the drop time.
        const end = Math.max(t + 1, c.arrivedAt + quitAfter)
        sessionsEnding.set(end, (sessionsEnding.get(end) ?? 0) + q)
      }
      c.patient -= p
      c.quitters -= q
      active += take
      granted += take
      budget -= take
      if (c.patient + c.quitters <= EPS) line.shift()
    }
    admittedAt[t] = granted
    queue.push(line.reduce((s, c) => s + c.patient + c.quitters, 0))
    activeOut.push(active)
    if (drainedAt === undefined && patientLeft <= 1e-6 && t >= arrivals.length - 1) drainedAt = t
    if (drainedAt !== undefined && active <= EPS && t > arrivals.length) break
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
    admitted: admittedAt,
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
