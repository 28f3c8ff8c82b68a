// Comparisons of targets in one sitting: the aggregate of a target's segments (latency percentiles from
// wrk's histogram, the CPU of the generator and the servers), compare (slices taking turns), paired
// (pairs of runs), and bursts.
import type { Redis } from 'ioredis'
import { log, SETTINGS } from './common.js'
import { cpuTimes } from './cpu.js'
import { commandStats, diffStats } from './redis-stats.js'
import { runBurst, runLoad, type Segment, type Target } from './wrk.js'

export interface Aggregate {
  name: string
  responses: number
  sent: number
  seconds: number
  rps: number
  non2xx: number
  errors: number
  statuses: Record<string, number>
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number }
  segmentRps: number[]
  /** Redis command deltas summed over the measured segments (countRedis targets only). */
  redis?: Map<string, number>
  /**
   * CPU used during the measured segments, per process: share of one core, and µs per response.
   * GENERATOR is wrk.
   */
  cpu: Record<string, { cores: number; usPerRequest: number }>
  /** The server under test (the target's first pid), and whether wrk was busier than it (or near its one core). */
  server: string | undefined
  generatorBound: boolean
  /** Bursts: µs of CPU per response from the burst's moment to its end, per process and wrk (Segment.burstCpu). */
  burstCpuUs?: Record<string, number>
}

/** The label of the load generator in Aggregate.cpu. */
export const GENERATOR = 'wrk'
/** wrk runs one thread: at this share of a core it is the bottleneck, whatever the server does. */
export const GENERATOR_SATURATED = 0.9

/** Latency percentiles (nearest rank, as scripts/lib/stats.ts) of a histogram of µs, in ms. */
export function histogramStats(h: Map<number, number>): {
  count: number
  mean: number
  p50: number
  p90: number
  p99: number
  max: number
} {
  const values = [...h.keys()].sort((a, b) => a - b)
  let count = 0
  let sum = 0
  for (const v of values) {
    const n = h.get(v) as number
    count += n
    sum += v * n
  }
  const at = (p: number) => {
    if (count === 0) return Number.NaN
    const rank = Math.min(count, Math.max(1, Math.ceil((p / 100) * count)))
    let seen = 0
    for (const v of values) {
      seen += h.get(v) as number
      if (seen >= rank) return v / 1000
    }
    return (values[values.length - 1] as number) / 1000
  }
  return { count, mean: count === 0 ? Number.NaN : sum / count / 1000, p50: at(50), p90: at(90), p99: at(99), max: at(100) }
}

export function mergeHistograms(hs: Iterable<Map<number, number>>): Map<number, number> {
  const all = new Map<number, number>()
  for (const h of hs) for (const [v, n] of h) all.set(v, (all.get(v) ?? 0) + n)
  return all
}

/** @param measured the segments, each the slices it was run in (one each, outside compare). */
export function aggregate(
  name: string,
  measured: Segment[][],
  redis: Map<string, number> | undefined,
  cpuSeconds: Map<string, number>,
  server: string | undefined,
): Aggregate {
  const segments = measured.flat()
  const responses = segments.reduce((s, x) => s + x.responses, 0)
  const seconds = segments.reduce((s, x) => s + x.seconds, 0)
  const wallSeconds = segments.reduce((s, x) => s + x.wallSeconds, 0)
  const generator = segments.reduce((s, x) => s + x.generatorCpuSeconds, 0)
  const statuses: Record<string, number> = {}
  for (const s of segments) for (const [k, v] of Object.entries(s.statuses)) statuses[k] = (statuses[k] ?? 0) + v
  const { mean, p50, p90, p99, max } = histogramStats(mergeHistograms(segments.map((s) => s.histogram)))
  const cpu: Aggregate['cpu'] = {
    [GENERATOR]: { cores: generator / seconds, usPerRequest: (generator * 1e6) / responses },
  }
  for (const [k, v] of cpuSeconds) cpu[k] = { cores: v / wallSeconds, usPerRequest: (v * 1e6) / responses }
  const gen = cpu[GENERATOR]?.cores ?? 0
  const srv = server === undefined ? undefined : cpu[server]?.cores
  return {
    name,
    responses,
    sent: segments.reduce((s, x) => s + x.sent, 0),
    seconds,
    rps: responses / seconds,
    non2xx: segments.reduce((s, x) => s + x.non2xx, 0),
    errors: segments.reduce((s, x) => s + x.errors, 0),
    statuses,
    latencyMs: { mean, p50, p90, p99, max },
    segmentRps: measured.map((m) => m.reduce((n, x) => n + x.responses, 0) / m.reduce((n, x) => n + x.seconds, 0)),
    redis,
    cpu,
    server,
    generatorBound: gen >= GENERATOR_SATURATED || (srv !== undefined && gen >= srv),
  }
}

/**
 * Measures targets against each other in one sitting: a warm-up per target, then two measured
 * segments per target of segmentSeconds each, every segment run in slices of sliceSeconds that take
 * turns with the other targets' in palindromic order (A B C C B A A B C ...). The machines this runs
 * on drift by a fifth from one second to the next (a virtual machine's neighbours): a segment of 5 s
 * in one go can land on a slow stretch that its baseline missed, and a ratio moved by 0.1 or more
 * between two runs. Taking turns every second, each target sees the same stretches. A target with an
 * alternate (a second process of the same server) runs it in every other turn.
 */
export async function compare(
  targets: Target[],
  options: { warmupSeconds?: number; segmentSeconds?: number; sliceSeconds?: number; redis?: Redis } = {},
): Promise<Map<string, Aggregate>> {
  const o = {
    warmupSeconds: SETTINGS.warmupSeconds,
    segmentSeconds: SETTINGS.segmentSeconds,
    sliceSeconds: SETTINGS.sliceSeconds,
    ...options,
  }
  for (const t of targets) {
    log(`warm-up ${t.name}${t.alternate ? ' (both processes)' : ''} (${o.warmupSeconds} s)`)
    await runLoad(t, { seconds: o.warmupSeconds })
    if (t.alternate) await runLoad(t.alternate, { seconds: o.warmupSeconds })
  }
  const slices = Math.max(1, Math.round(o.segmentSeconds / o.sliceSeconds))
  const sliceSeconds = o.segmentSeconds / slices
  const segments = new Map<string, Segment[][]>(targets.map((t) => [t.name, [[], []]]))
  const deltas = new Map<string, Map<string, number>>()
  const cpu = new Map<string, Map<string, number>>(targets.map((t) => [t.name, new Map()]))
  for (let half = 0; half < 2; half++) {
    log(`measure segment ${half + 1} of ${targets.map((t) => t.name).join(', ')} (${slices} turns of ${sliceSeconds} s each)`)
    for (let turn = 0; turn < slices; turn++) {
      for (const t of turn % 2 === 0 ? targets : [...targets].reverse()) {
        // A target with two processes: each takes every other turn (the other one in the second segment).
        const run = t.alternate !== undefined && (turn + half) % 2 === 1 ? t.alternate : t
        const before = t.countRedis && o.redis ? await commandStats(o.redis) : undefined
        const cpuBefore = cpuTimes(run.pids ?? {})
        const seg = await runLoad(run, { seconds: sliceSeconds })
        const cpuAfter = cpuTimes(run.pids ?? {})
        const acc = cpu.get(t.name) as Map<string, number>
        for (const [k, v] of cpuAfter) acc.set(k, (acc.get(k) ?? 0) + v - (cpuBefore.get(k) ?? 0))
        if (before && o.redis) {
          const d = diffStats(before, await commandStats(o.redis))
          const acc = deltas.get(t.name) ?? new Map<string, number>()
          for (const [k, v] of d) acc.set(k, (acc.get(k) ?? 0) + v)
          deltas.set(t.name, acc)
        }
        segments.get(t.name)?.[half]?.push(seg)
      }
    }
  }
  return new Map(
    targets.map((t) => [
      t.name,
      aggregate(t.name, segments.get(t.name) ?? [], deltas.get(t.name), cpu.get(t.name) ?? new Map(), Object.keys(t.pids ?? {})[0]),
    ]),
  )
}

/** A paired comparison of two targets (paired below). */
export interface Paired {
  /** The median of the pairs' ratios (a's rate over b's, one pair of adjacent turns each), and their quartiles. */
  median: number
  quartiles: [number, number]
  pairs: number
  /** The servers' CPU per response over all the turns, µs: a's and b's. */
  cpuUs: [number, number]
}

/**
 * Two targets compared pair by pair: `pairs` pairs of adjacent turns of sliceSeconds (a b, then b a,
 * so that neither always goes first), each pair giving one ratio of a's rate to b's; with alternates,
 * the two processes of each side take every other pair. A throughput figure here moves by a tenth
 * from one second to the next; two adjacent seconds move together, so the median of the pairs'
 * ratios resolves a difference of a few percent that two segments of a few seconds do not.
 */
export async function paired(a: Target, b: Target, pairs: number, sliceSeconds = SETTINGS.sliceSeconds): Promise<Paired> {
  const ratios: number[] = []
  const cpu = [0, 0]
  const responses = [0, 0]
  const turn = async (t: Target, side: number, i: number) => {
    const run = t.alternate !== undefined && i % 2 === 1 ? t.alternate : t
    const server = Object.keys(run.pids ?? {})[0]
    const pid = server === undefined ? {} : { [server]: (run.pids ?? {})[server] as number }
    const before = cpuTimes(pid)
    const seg = await runLoad(run, { seconds: sliceSeconds })
    const after = cpuTimes(pid)
    for (const [k, v] of after) cpu[side] = (cpu[side] as number) + v - (before.get(k) ?? 0)
    responses[side] = (responses[side] as number) + seg.responses
    return seg.responses / seg.seconds
  }
  log(`paired turns: ${a.name} against ${b.name} (${pairs} pairs of ${sliceSeconds} s turns)`)
  for (let i = 0; i < pairs; i++) {
    if (i % 2 === 0) {
      const ra = await turn(a, 0, i)
      ratios.push(ra / (await turn(b, 1, i)))
    } else {
      const rb = await turn(b, 1, i)
      ratios.push((await turn(a, 0, i)) / rb)
    }
  }
  const sorted = [...ratios].sort((x, y) => x - y)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
  return {
    median: at(0.5),
    quartiles: [at(0.25), at(0.75)],
    pairs,
    cpuUs: [((cpu[0] as number) * 1e6) / (responses[0] as number), ((cpu[1] as number) * 1e6) / (responses[1] as number)],
  }
}

/** One burst (runBurst) with the CPU of the target's processes over it. */
export async function burst(target: Target, connections: number): Promise<Aggregate> {
  return (await burstWithAnswers(target, connections, false)).aggregate
}

/** The same, also giving every response's status and body (burst mode of bench/wrk.lua with BENCH_WRK_ANSWERS). */
export async function burstWithAnswers(
  target: Target,
  connections: number,
  answers = true,
): Promise<{ aggregate: Aggregate; answers: { status: number; body: string }[] }> {
  const cpuBefore = cpuTimes(target.pids ?? {})
  const seg = await runBurst(target, connections, answers)
  const cpuAfter = cpuTimes(target.pids ?? {})
  const cpu = new Map<string, number>()
  for (const [k, v] of cpuAfter) cpu.set(k, v - (cpuBefore.get(k) ?? 0))
  const agg = aggregate(target.name, [[seg]], undefined, cpu, Object.keys(target.pids ?? {})[0])
  if (seg.burstCpu !== undefined) agg.burstCpuUs = Object.fromEntries([...seg.burstCpu].map(([k, v]) => [k, (v * 1e6) / connections]))
  return { aggregate: agg, answers: seg.answers ?? [] }
}
