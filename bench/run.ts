// `npm run bench`: Anteroom's throughput, latency, Redis round trips and Redis memory, each as a ratio
// to a baseline measured in the same run on this machine. Absolute figures depend on the machine and
// its neighbours; only the ratios are compared with targets.
//
// One module per measurement in bench/measure/, each naming its baseline and target:
//   1 queued-poll.ts   2 admitted.ts   3 long-line.ts   4 redis-calls.ts   5 redis-memory.ts
//   6 claims.ts        7 crowd.ts      8 worker.ts       9 pow.ts         10 gate-repairs.ts
//   11 metrics-cost.ts
// 1 to 5 share one redis-server and one origin (started here); 6, 7 and 10 one PostgreSQL server and a
// redis-server for the claim gate (bench/postgres.ts); 8 starts its own; 9 runs in this process. Every server under test runs in its own child process
// (`node --import tsx ...`) on 127.0.0.1 and a free port; the load generator is wrk (one thread, 50
// connections, bench/wrk.lua; bench/lib/wrk.ts), a C program that costs less per request than any server
// it loads here, so that every baseline is bound by its server. Every row under load shows the cores
// wrk and the server under test were busy, and a row where wrk was the busier is flagged (and its
// target counts as missed). Everything started is stopped by pid, also on error. (6 and 10 load the
// booking origin in this process, without HTTP; 7 runs it in a child process and bursts at it with wrk.)
//
// Environment (all optional): BENCH_ONLY (a comma-separated list of measurements to run, by module name:
// crowd, claims, gate-repairs, worker, pow, metrics-cost, and edges for 1 to 5 together (any of their
// names runs all five); e.g. BENCH_ONLY=crowd npx tsx bench/run.ts; unset: all), BENCH_SEGMENT_SECONDS (5; every target is measured in two segments),
// BENCH_WARMUP_SECONDS (2), BENCH_PROFILE=1 (run every server under `node --cpu-prof`, profiles in
// bench/out/profiles/<server>; summarise them with `npx tsx bench/profile.ts`). Results: bench/out/results.json.
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { type RedisServer, startRedis } from '../scripts/lib/redis-server.js'
import { type EdgeBench, startServer } from './edge.js'
import { type Aggregate, CONNECTIONS, GENERATOR, log, ROOT, type Row, requireWrk, SETTINGS, stopAllChildren } from './lib.js'
import { measureAdmitted } from './measure/admitted.js'
import { measureClaims } from './measure/claims.js'
import { measureCrowd } from './measure/crowd.js'
import { measureGateRepairs } from './measure/gate-repairs.js'
import { measureLongLine } from './measure/long-line.js'
import { measureMetricsCost } from './measure/metrics-cost.js'
import { measurePow } from './measure/pow.js'
import { measureQueuedPoll } from './measure/queued-poll.js'
import { measureRedisCalls } from './measure/redis-calls.js'
import { measureRedisMemory } from './measure/redis-memory.js'
import { measureWorker } from './measure/worker.js'
import { stopBookingServer, withBookingDatabase } from './postgres.js'

const OUT_DIR = join(ROOT, 'bench', 'out')
const PROFILE_DIR = join(OUT_DIR, 'profiles')

let redisServer: RedisServer | undefined

const EDGE_MEASUREMENTS = ['edges', 'queued-poll', 'admitted', 'long-line', 'redis-calls', 'redis-memory']
const ONLY = process.env.BENCH_ONLY?.split(',')
  .map((s) => s.trim())
  .filter(Boolean)
/** Whether BENCH_ONLY (unset: everything) asks for one of these measurements. */
const wanted = (...names: string[]) => ONLY === undefined || ONLY.length === 0 || names.some((n) => ONLY.includes(n))

/** Measurements 1 to 5, on one redis-server and one origin. */
async function measureEdges(rows: Row[], notes: string[], warnings: string[], results: Record<string, unknown>): Promise<void> {
  requireWrk()
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error) {
    throw new Error('redis-server is not on the PATH. Install it (Debian: apt-get install -y redis-server; `npm test` does this as root).')
  }
  let redis: Redis | undefined
  try {
    redisServer = await startRedis()
    log(`redis-server is up on ${redisServer.url} (pid ${redisServer.pid})`)
    redis = new Redis(redisServer.url)
    const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1]
    const profileDir = SETTINGS.profile ? PROFILE_DIR : undefined
    const origin = await startServer({ profileDir }, 'origin', 'bench/origin.ts')
    const b: EdgeBench = { redisServer, redis, origin, profileDir }

    const poll = await measureQueuedPoll(b)
    const line = await measureLongLine(b)
    const admitted = await measureAdmitted(b)
    await origin.stop()
    const memory = await measureRedisMemory(b)
    const calls = await measureRedisCalls(
      redis,
      { run: poll.poll, monitor: poll.monitor },
      { run: admitted.admitted, monitor: admitted.monitor },
    )

    rows.push(...poll.rows, ...admitted.rows, ...line.rows, ...calls.rows, ...memory.rows)
    warnings.push(...poll.warnings, ...line.warnings, ...calls.warnings, ...memory.warnings)
    const runs = [...poll.runs, ...line.runs, ...admitted.runs]
    for (const a of runs) {
      if (a.non2xx > 0 || a.errors > 0) {
        warnings.push(`${a.name}: ${a.non2xx} non-2xx responses and ${a.errors} errors (statuses ${JSON.stringify(a.statuses)})`)
      }
    }
    notes.push(...admitted.notes, ...calls.notes, ...memory.notes, cpuNote(runs))
    const summary = (a: Aggregate) => ({ ...a, redis: a.redis ? Object.fromEntries(a.redis) : undefined })
    Object.assign(results, {
      commandstatsExperiment: calls.results.commandstatsExperiment,
      machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, redis: redisVersion },
      settings: {
        generator: `${wrkVersion()} -t1 -c${CONNECTIONS}, bench/wrk.lua`,
        connections: CONNECTIONS,
        segmentSeconds: SETTINGS.segmentSeconds,
        segmentsPerTarget: 2,
        warmupSeconds: SETTINGS.warmupSeconds,
        order: 'palindromic (A B C C B A) per comparison',
        profile: SETTINGS.profile,
      },
      runs: Object.fromEntries(runs.map((a) => [a.name, summary(a)])),
      joinPass: poll.joinPass,
      redisCommands: calls.results.redisCommands,
      ...memory.results,
    })
  } finally {
    redis?.disconnect()
    await stopAllChildren()
    await redisServer?.stop()
    redisServer = undefined
  }
}

function wrkVersion(): string {
  const out = spawnSync('wrk', ['-v'], { encoding: 'utf8' })
  return /wrk\s+(\S+)/.exec(`${out.stdout}${out.stderr}`)?.[0] ?? 'wrk'
}

function cpuNote(runs: Aggregate[]): string {
  return `CPU per run (cores busy; µs per response; ${GENERATOR} is the load generator), on ${cpus().length} cores:\n${runs
    .map(
      (a) =>
        `  ${a.name.padEnd(30)} ${Object.entries(a.cpu)
          .map(([k, v]) => `${k} ${v.cores.toFixed(2)} (${v.usPerRequest.toFixed(1)} µs)`)
          .join(', ')}${a.generatorBound ? '  GENERATOR-BOUND' : ''}`,
    )
    .join('\n')}`
}

function printTable(rows: Row[]): void {
  const head = ['measurement', 'value', 'baseline', 'ratio', 'target', 'met', `cores busy: ${GENERATOR} and server (value | baseline)`]
  const cells = rows.map((r) => [
    r.measurement,
    r.value,
    r.baseline,
    r.ratio,
    r.target,
    r.met === null ? '' : r.met ? 'yes' : 'NO',
    r.cpu ?? '',
  ])
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)))
  const line = (c: string[]) => c.map((v, i) => (i === 0 ? v.padEnd(widths[i] as number) : v.padStart(widths[i] as number))).join('  ')
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)]
  process.stdout.write(`\n${out.join('\n')}\n`)
}

async function main(): Promise<number> {
  const started = Date.now()
  mkdirSync(OUT_DIR, { recursive: true })
  if (SETTINGS.profile) mkdirSync(PROFILE_DIR, { recursive: true })
  const rows: Row[] = []
  const notes: string[] = []
  const warnings: string[] = []
  const results: Record<string, unknown> = {}
  if (SETTINGS.profile) warnings.push('BENCH_PROFILE=1: every server ran under the CPU profiler, so the figures are lower than usual')

  if (ONLY !== undefined) log(`BENCH_ONLY=${ONLY.join(',')}: the other measurements are left out`)
  if (wanted(...EDGE_MEASUREMENTS)) await measureEdges(rows, notes, warnings, results)

  let crowdOk = true
  let repairsOk = true
  if (wanted('claims', 'crowd', 'gate-repairs')) {
    const [claims, crowd, repairs] = await withBookingDatabase(
      async (pg) =>
        [
          wanted('claims') ? await measureClaims(pg) : undefined,
          wanted('crowd') ? await measureCrowd(pg) : undefined,
          wanted('gate-repairs') ? await measureGateRepairs(pg) : undefined,
        ] as const,
    )
    crowdOk = crowd?.ok ?? true
    repairsOk = !(repairs?.rows.some((r) => r.met === false) ?? false)
    results.booking = {}
    for (const m of [claims, crowd, repairs]) {
      if (m === undefined) continue
      rows.push(...m.rows)
      notes.push(...m.notes)
      warnings.push(...m.warnings)
      Object.assign(results.booking as object, m.results)
    }
  }

  if (wanted('worker')) {
    const worker = await measureWorker()
    rows.push(...worker.rows)
    results.worker = worker.results
  }

  if (wanted('pow')) {
    const pow = await measurePow()
    rows.push(...pow.rows)
    notes.push(...pow.notes)
    Object.assign(results, pow.results)
  }

  if (wanted('metrics-cost')) {
    const pollCpu = (results.runs as Record<string, Aggregate> | undefined)?.['edge poll (JSON)']?.cpu.edge?.usPerRequest
    const metricsCost = await measureMetricsCost(pollCpu)
    rows.push(...metricsCost.rows)
    Object.assign(results, metricsCost.results)
  }

  for (const r of rows)
    if (r.generatorBound) warnings.push(`${r.measurement}: the load generator was the bottleneck (${r.cpu}); the ratio is not the server's`)
  printTable(rows)
  for (const n of notes) process.stdout.write(`\nnote: ${n}`)
  for (const w of warnings) process.stdout.write(`\nWARNING: ${w}`)
  const met = rows.filter((r) => r.met === true).length
  const judged = rows.filter((r) => r.met !== null).length
  const seconds = (Date.now() - started) / 1000
  process.stdout.write(
    `\n\ntargets met: ${met} of ${judged}. Ratios from one run on this machine; expect ±10-15% noise. Took ${seconds.toFixed(0)} s.\n`,
  )
  const file = join(OUT_DIR, 'results.json')
  const round = (_key: string, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(3)) : v)
  writeFileSync(
    file,
    `${JSON.stringify({ date: new Date().toISOString(), durationSeconds: seconds, rows, notes, warnings, ...results }, round, 2)}\n`,
  )
  // bench/** is in biome's scope (bench/out is only git-ignored), so the file gets biome's own layout
  // and `biome check` stays clean after a run.
  spawnSync(join(ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', file], { cwd: ROOT, stdio: 'ignore' })
  process.stdout.write(`results: ${file}\n`)
  return warnings.some((w) => w.includes('non-2xx')) || !crowdOk || !repairsOk ? 1 : 0
}

/** Stops what is still running: the booking bench's PostgreSQL first, then the children, then Redis. */
async function stopEverything(): Promise<void> {
  await stopBookingServer().catch(() => {})
  await stopAllChildren()
  await redisServer?.stop()
}

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return
    stopping = true
    log(`${signal}: stopping the servers`)
    void stopEverything().finally(() => process.exit(130))
  })
}

main().then(
  (code) => process.exit(code),
  async (err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    await stopEverything()
    process.exit(1)
  },
)
