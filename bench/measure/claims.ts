// Measurement 6: how many seat claims a second the booking origin's store makes against PostgreSQL.
//   Baseline (the ceiling): a single-row conditional UPDATE (CEILING_SQL in bench/postgres.ts) issued
//   by the same number of concurrent workers through the same kind of pool (postgresDb(url, { max: 10 })).
//   Measured against it, for information (no target):
//   - hot seat: every worker is a different visitor trying to hold the same seat through
//     PostgresSeatStore.hold(); a worker that wins releases the seat at once, so the fight goes on;
//   - spread: every worker holds and releases a seat of its own;
//   - hot seat through the claim gate on Redis (src/booking/gate.ts), as the origin claims: the gate
//     answers the doomed attempts, PostgreSQL only the ones it lets through; each attempt's statements
//     are counted, to show that a doomed claim costs the database none. Target: ≥ 1.0 × the ceiling;
//   - hot seat through the ordered lane (./lane.ts), alone and with the gate in front as the origin
//     claims for a lane event. Target: ≥ 2.0 × the ceiling (issue #32).
// Palindromic segments (A B C ... C B A) after a warm-up, like the HTTP measurements. A short diagnostic
// pass afterwards counts the statements per attempt and samples pg_stat_activity, to show where a claim's
// time goes (lock waits, statements, round trips). What-if (notes and results.json only, never rows): the
// same claims through preparedDb, whose statements are prepared.
// Environment (optional): BENCH_BOOKING_WARMUP_SECONDS (1).
import { readdirSync, readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { percentile } from '../../scripts/lib/stats.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../../src/adapters/postgres/seed.js'
import { BookingGate } from '../../src/booking/gate.js'
import { Reconciler } from '../../src/booking/reconciler.js'
import { isAnteroomError } from '../../src/core/errors.js'
import type { EventInfo } from '../../src/ports/seat-store.js'
import { fmtInt, fmtMs, log, type Measured, SETTINGS } from '../lib.js'
import {
  type BookingDatabase,
  bump,
  CEILING_SQL,
  countingDb,
  type Diagnosis,
  describeDiagnosis,
  makeDiagnosis,
  newTally,
  POOL,
  sampleActivity,
} from '../postgres.js'
import { laneHotSeat } from './lane.js'

/** Concurrent workers (visitors). */
const WORKERS = 50
const WARMUP_SECONDS = Number(process.env.BENCH_BOOKING_WARMUP_SECONDS ?? 1)
const DIAGNOSTIC_SECONDS = 2
const ROOM = 'sale'

/** Milliseconds with one decimal, as the booking notes show them. */
const msText = (n: number) => fmtMs(n, 1)

export async function measureClaims(pg: BookingDatabase): Promise<Measured> {
  const notes: string[] = []
  const warnings: string[] = []
  const db = pg.open(POOL)
  const store = new PostgresSeatStore(db)
  const seed = { name: 'Bench night', room: ROOM, priceCents: 2500, maxPerVisitor: 4, holdSeconds: 600 }
  await seedEvent(db, { ...seed, id: 'hot', rows: ['A', 'B', 'C', 'D'], seatsPerRow: 10 })
  const spreadRows = Array.from({ length: 20 }, (_, i) => String.fromCharCode(65 + i))
  await seedEvent(db, { ...seed, id: 'spread', rows: spreadRows, seatsPerRow: 20 })
  const hot = (await store.event('hot')) as EventInfo
  const spread = (await store.event('spread')) as EventInfo
  const spreadSeats = spreadRows.flatMap((r) => Array.from({ length: 20 }, (_, i) => `${r}${i + 1}`))
  const stride = Math.floor(spreadSeats.length / WORKERS)

  const ceilingStep = (d: Db) => async (): Promise<Attempt> => {
    const t0 = performance.now()
    await d.query(CEILING_SQL)
    return { outcome: 'updated', ms: performance.now() - t0 }
  }
  const hotStep = (d: Db) => {
    const s = new PostgresSeatStore(d)
    const steps = Array.from({ length: WORKERS }, (_, w) => claimStep(s, hot, `hot-${w}`, 'A1'))
    return (w: number) => (steps[w] as () => Promise<Attempt>)()
  }
  const spreadStep = (d: Db) => {
    const s = new PostgresSeatStore(d)
    const steps = Array.from({ length: WORKERS }, (_, w) => claimStep(s, spread, `spread-${w}`, spreadSeats[w * stride] as string))
    return (w: number) => (steps[w] as () => Promise<Attempt>)()
  }
  // The gate in front: every worker its own store and origin gate over the shared pool, with its own
  // statement count, so that each attempt's statements are known (a worker's attempts run one by one).
  const gate = await pg.gate()
  await new Reconciler({ gate, store, events: async () => ['hot'] }).run()
  const gatedDoomed = { attempts: 0, statements: 0 }
  const gatedWorkers = await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      const tally = newTally()
      const s = new PostgresSeatStore(countingDb(db, tally))
      const bookingGate = new BookingGate(gate, s)
      await s.event('hot')
      await bookingGate.prepare('hot')
      return { s, bookingGate, sent: () => [...tally.statements.values()].reduce((n, [c]) => n + c, 0) }
    }),
  )
  const hotGatedStep = (w: number) => {
    const { s, bookingGate, sent } = gatedWorkers[w] as (typeof gatedWorkers)[number]
    return async (): Promise<Attempt> => {
      const t0 = performance.now()
      const before = sent()
      const holder = `gated-${w}`
      const id = crypto.randomUUID()
      const asked = await bookingGate.claim({ event: 'hot', hold: id, seats: ['A1'], ttlMs: hot.holdSeconds * 1000 })
      if (asked.kind === 'gone') {
        const ms = performance.now() - t0
        gatedDoomed.attempts++
        gatedDoomed.statements += sent() - before
        return { outcome: 'taken at the gate', ms }
      }
      try {
        const o = await s.hold({ event: hot, holder, seats: ['A1'], id: asked.kind === 'pass' ? id : undefined })
        const ms = performance.now() - t0
        if (o.kind === 'held') await s.release(o.hold.id, holder)
        await bookingGate.release('hot', id)
        return { outcome: o.kind === 'held' ? 'held' : `${o.kind} (database)`, ms }
      } catch (err) {
        await bookingGate.release('hot', id)
        if (!isAnteroomError(err, 'ERR_DB_BUSY')) throw err
        return { outcome: 'busy (ERR_DB_BUSY)', ms: performance.now() - t0 }
      }
    }
  }
  const gatedSteps = Array.from({ length: WORKERS }, (_, w) => hotGatedStep(w))
  const ceilingTarget: LoadTarget = { name: 'pg ceiling: 1-row conditional UPDATE', step: ceilingStep(db) }
  const hotGatedTarget: LoadTarget = {
    name: 'hot-seat claims through the claim gate',
    step: (w) => (gatedSteps[w] as () => Promise<Attempt>)(),
  }
  const hotTarget: LoadTarget = { name: 'pg hot-seat claims', step: hotStep(db) }
  const spreadTarget: LoadTarget = { name: 'pg spread claims', step: spreadStep(db) }
  // What-if (notes only, not table rows): the same claims through a Db whose statements are prepared.
  const prepared = pg.openPrepared(POOL)
  const hotPreparedTarget: LoadTarget = { name: 'pg hot-seat claims, prepared statements (what-if)', step: hotStep(prepared) }
  const spreadPreparedTarget: LoadTarget = { name: 'pg spread claims, prepared statements (what-if)', step: spreadStep(prepared) }
  // The ordered lane (bench/measure/lane.ts): one allocator in this process, the lane on the gate's redis-server.
  const laneTarget = await laneHotSeat(db, pg.gateUrl, WORKERS)
  // The same with the gate in front, as the origin claims for a lane event (its own event and allocator).
  const laneGatedTarget = await laneHotSeat(db, pg.gateUrl, WORKERS, gate)
  const m6 = await compareLoads(
    [ceilingTarget, hotTarget, hotGatedTarget, laneTarget, laneGatedTarget, spreadTarget, hotPreparedTarget, spreadPreparedTarget],
    pg,
  )
  await laneTarget.stop()
  await laneGatedTarget.stop()
  const laneAgg = m6.get(laneTarget.name) as LoadAggregate
  const laneGatedAgg = m6.get(laneGatedTarget.name) as LoadAggregate
  const hotGated = m6.get(hotGatedTarget.name) as LoadAggregate
  const doomedPerClaim = gatedDoomed.statements / Math.max(1, gatedDoomed.attempts)
  await pg.close(prepared)
  const ceiling = m6.get(ceilingTarget.name) as LoadAggregate
  const hotAgg = m6.get(hotTarget.name) as LoadAggregate
  const spreadAgg = m6.get(spreadTarget.name) as LoadAggregate
  const hotPrepared = m6.get(hotPreparedTarget.name) as LoadAggregate
  const spreadPrepared = m6.get(spreadPreparedTarget.name) as LoadAggregate
  for (const a of [hotAgg, spreadAgg, hotPrepared, spreadPrepared]) {
    const busy = a.outcomes['busy (ERR_DB_BUSY)'] ?? 0
    if (busy > 0) warnings.push(`${a.name}: ${busy} attempts ended in ERR_DB_BUSY (lock or statement timeout)`)
  }
  const [held] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM seats WHERE status <> 'free'")
  if ((held?.n ?? 0) !== 0) warnings.push(`after the claim measurements ${held?.n} seats are not free`)

  // Diagnostic pass (not part of the figures): the same loads with statement counting and pg_stat_activity sampling.
  const diagnoses: Diagnosis[] = []
  for (const [name, make] of [
    [ceilingTarget.name, (d: Db) => ceilingStep(d)],
    [hotTarget.name, hotStep],
    [spreadTarget.name, spreadStep],
  ] as const) {
    diagnoses.push(await diagnose(name, make, db, pg))
  }
  await pg.close(db)

  const pct = (a: LoadAggregate) =>
    `${a.name}: ${fmtInt(a.perSecond)}/s (segments ${a.segmentPerSecond.map(fmtInt).join(', ')}), latency p50 ${msText(a.latencyMs.p50)} ` +
    `p99 ${msText(a.latencyMs.p99)}, outcomes ${JSON.stringify(a.outcomes)}, cores busy: node ${a.cores.node.toFixed(2)}, postgres ${a.cores.postgres.toFixed(2)}`
  notes.push(
    `booking claims (${WORKERS} concurrent workers, pool of ${POOL}, ${SETTINGS.segmentSeconds} s × 2 segments each, palindromic), on ${cpus().length} cores:\n` +
      [ceiling, hotAgg, hotGated, laneAgg, laneGatedAgg, spreadAgg, hotPrepared, spreadPrepared]
        .map((a) => `  ${pct(a)}${a === ceiling ? '' : `; ratio to the ceiling ${(a.perSecond / ceiling.perSecond).toFixed(3)}`}`)
        .join('\n') +
      `\n  through the claim gate: ${fmtInt(gatedDoomed.attempts)} attempts refused at the gate sent ${gatedDoomed.statements} statements to PostgreSQL.` +
      `\n  through the ordered lane: the allocator decided ${fmtInt(laneTarget.allocator.stats.claims)} claims in ${fmtInt(laneTarget.allocator.stats.batches)} batches, ` +
      `refused ${fmtInt(laneTarget.allocator.stats.refused)} from its stock in memory, wrote ${fmtInt(laneTarget.allocator.stats.written)} (overruled by PostgreSQL: ${laneTarget.allocator.stats.overruled}); ` +
      `with the gate in front, its allocator decided ${fmtInt(laneGatedTarget.allocator.stats.claims)} claims the gate let through, wrote ${fmtInt(laneGatedTarget.allocator.stats.written)}.` +
      '\n  "prepared statements (what-if)": a bench-local Db (preparedDb in bench/postgres.ts): one pool of 10 with { prepare: true } and ' +
      "the driver's own sql.begin(), the design that raised UNSAFE_TRANSACTION under load. Production (postgresDb) now prepares every " +
      'statement too, with transactions on connections of their own (src/adapters/postgres/postgres-js.ts); this row is kept for comparison.',
  )
  notes.push(
    `where a claim's time goes (diagnostic pass, ${DIAGNOSTIC_SECONDS} s each, not part of the figures):\n` +
      diagnoses.map((d) => `  ${describeDiagnosis(d, 'attempt')}`).join('\n'),
  )

  const ratio = (v: number, b: number) => (v / b).toFixed(2)
  const ceilingText = `${fmtInt(ceiling.perSecond)} stmt/s (1-row UPDATE)`
  return {
    rows: [
      {
        id: 'pg_ceiling_update_rate',
        measurement: `6. PG ceiling: 1-row conditional UPDATE, ${WORKERS} workers, pool ${POOL}`,
        value: `${fmtInt(ceiling.perSecond)} stmt/s`,
        baseline: '-',
        ratio: '-',
        target: 'info (baseline of 6)',
        met: null,
      },
      {
        id: 'pg_hot_seat_claims_vs_ceiling',
        measurement: `6. hot-seat claims, ${WORKERS} visitors on 1 seat`,
        value: `${fmtInt(hotAgg.perSecond)} attempts/s`,
        baseline: ceilingText,
        ratio: ratio(hotAgg.perSecond, ceiling.perSecond),
        target: 'info',
        met: null,
      },
      {
        id: 'gated_hot_seat_claims_vs_ceiling',
        measurement: `6. hot-seat claims through the claim gate, ${WORKERS} visitors on 1 seat`,
        value: `${fmtInt(hotGated.perSecond)} attempts/s`,
        baseline: ceilingText,
        ratio: ratio(hotGated.perSecond, ceiling.perSecond),
        target: '≥ 1.0',
        met: hotGated.perSecond >= ceiling.perSecond,
      },
      {
        id: 'lane_hot_seat_claims_vs_ceiling',
        measurement: `6. hot-seat claims through the ordered lane, ${WORKERS} visitors on 1 seat`,
        value: `${fmtInt(laneAgg.perSecond)} attempts/s`,
        baseline: ceilingText,
        ratio: ratio(laneAgg.perSecond, ceiling.perSecond),
        target: '≥ 2.0',
        met: laneAgg.perSecond >= 2 * ceiling.perSecond,
      },
      {
        id: 'lane_gated_hot_seat_claims_vs_ceiling',
        measurement: `6. hot-seat claims with the lane on, the gate in front (as the origin claims), ${WORKERS} visitors on 1 seat`,
        value: `${fmtInt(laneGatedAgg.perSecond)} attempts/s`,
        baseline: ceilingText,
        ratio: ratio(laneGatedAgg.perSecond, ceiling.perSecond),
        target: '≥ 2.0',
        met: laneGatedAgg.perSecond >= 2 * ceiling.perSecond,
      },
      {
        id: 'gated_doomed_statements',
        measurement: '6. database statements per claim the gate refused',
        value: doomedPerClaim.toFixed(3),
        baseline: '-',
        ratio: '-',
        target: '= 0',
        met: gatedDoomed.statements === 0 && gatedDoomed.attempts > 0,
      },
      {
        id: 'pg_spread_claims_vs_ceiling',
        measurement: `6. spread claims, ${WORKERS} visitors on own seats`,
        value: `${fmtInt(spreadAgg.perSecond)} attempts/s`,
        baseline: ceilingText,
        ratio: ratio(spreadAgg.perSecond, ceiling.perSecond),
        target: 'info',
        met: null,
      },
    ],
    notes,
    warnings,
    results: {
      postgres: {
        version: pg.version,
        workers: WORKERS,
        pool: POOL,
        warmupSeconds: WARMUP_SECONDS,
        segmentSeconds: SETTINGS.segmentSeconds,
      },
      claims: Object.fromEntries(
        [ceiling, hotAgg, hotGated, laneAgg, laneGatedAgg, spreadAgg, hotPrepared, spreadPrepared].map((a) => [a.name, a]),
      ),
      lane: laneTarget.allocator.stats,
      laneGated: laneGatedTarget.allocator.stats,
      gatedDoomed,
      diagnoses,
    },
  }
}

/** Linux USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100

/** CPU seconds so far of this process ("node": load generator, store and app) and of the postmaster's children. */
function cpuSeconds(postmaster: number): { node: number; postgres: number } {
  const self = process.cpuUsage()
  let pg = 0
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        if (Number(entry) === postmaster || Number(f[1]) === postmaster) pg += (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND
      } catch {
        // The process ended meanwhile.
      }
    }
  } catch {
    // Not Linux: no figure.
  }
  return { node: (self.user + self.system) / 1e6, postgres: pg }
}

interface Attempt {
  outcome: string
  /** Latency of the measured call itself (a hold, not the release that may follow it). */
  ms: number
}

interface LoadTarget {
  name: string
  /** One attempt by worker w; anything a worker does to reset state (a release) happens inside. */
  step: (w: number) => Promise<Attempt>
}

interface LoadSegment {
  attempts: number
  seconds: number
  latencies: number[]
  outcomes: Record<string, number>
  cpu: { node: number; postgres: number }
}

/** WORKERS concurrent loops of target.step until `seconds` have passed; every loop finishes its attempt. */
async function runSegment(target: LoadTarget, seconds: number, pg: BookingDatabase): Promise<LoadSegment> {
  const latencies: number[] = []
  const outcomes: Record<string, number> = {}
  const cpuBefore = cpuSeconds(pg.pid)
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      while (!pg.stopping() && performance.now() < deadline) {
        const a = await target.step(w)
        latencies.push(a.ms)
        bump(outcomes, a.outcome)
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  const cpuAfter = cpuSeconds(pg.pid)
  return {
    attempts: latencies.length,
    seconds: elapsed,
    latencies,
    outcomes,
    cpu: { node: cpuAfter.node - cpuBefore.node, postgres: cpuAfter.postgres - cpuBefore.postgres },
  }
}

interface LoadAggregate {
  name: string
  attempts: number
  seconds: number
  perSecond: number
  segmentPerSecond: number[]
  outcomes: Record<string, number>
  latencyMs: { mean: number; p50: number; p99: number; max: number }
  /** Cores busy during the measured segments. */
  cores: { node: number; postgres: number }
}

function aggregateLoad(name: string, segments: LoadSegment[]): LoadAggregate {
  const latencies = segments.flatMap((s) => s.latencies)
  const attempts = segments.reduce((s, x) => s + x.attempts, 0)
  const seconds = segments.reduce((s, x) => s + x.seconds, 0)
  const outcomes: Record<string, number> = {}
  for (const s of segments) for (const [k, v] of Object.entries(s.outcomes)) bump(outcomes, k, v)
  return {
    name,
    attempts,
    seconds,
    perSecond: attempts / seconds,
    segmentPerSecond: segments.map((s) => s.attempts / s.seconds),
    outcomes,
    latencyMs: {
      mean: latencies.reduce((s, v) => s + v, 0) / latencies.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
    },
    cores: {
      node: segments.reduce((s, x) => s + x.cpu.node, 0) / seconds,
      postgres: segments.reduce((s, x) => s + x.cpu.postgres, 0) / seconds,
    },
  }
}

/** Warm-up per target, then palindromic segments (A B C C B A), as bench/lib/paired.ts's compare() does for HTTP. */
async function compareLoads(targets: LoadTarget[], pg: BookingDatabase): Promise<Map<string, LoadAggregate>> {
  const segmentSeconds = SETTINGS.segmentSeconds
  for (const t of targets) {
    log(`warm-up ${t.name} (${WARMUP_SECONDS} s)`)
    await runSegment(t, WARMUP_SECONDS, pg)
  }
  const segments = new Map<string, LoadSegment[]>(targets.map((t) => [t.name, []]))
  for (const t of [...targets, ...[...targets].reverse()]) {
    log(`measure ${t.name} (${segmentSeconds} s)`)
    segments.get(t.name)?.push(await runSegment(t, segmentSeconds, pg))
  }
  return new Map(targets.map((t) => [t.name, aggregateLoad(t.name, segments.get(t.name) ?? [])]))
}

/** hold() for one visitor and seat; a win is released at once, so the seat is free for the next attempt. */
function claimStep(store: PostgresSeatStore, event: EventInfo, holder: string, seat: string): () => Promise<Attempt> {
  return async () => {
    const t0 = performance.now()
    let outcome: string
    try {
      const o = await store.hold({ event, holder, seats: [seat] })
      outcome = o.kind
      const ms = performance.now() - t0
      if (o.kind === 'held') await store.release(o.hold.id, holder)
      return { outcome, ms }
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_DB_BUSY')) throw err
      return { outcome: 'busy (ERR_DB_BUSY)', ms: performance.now() - t0 }
    }
  }
}

async function diagnose(
  name: string,
  makeStep: (db: Db) => (w: number) => Promise<Attempt>,
  db: Db,
  pg: BookingDatabase,
): Promise<Diagnosis> {
  const tally = newTally()
  const step = makeStep(countingDb(db, tally))
  log(`diagnose ${name} (${DIAGNOSTIC_SECONDS} s, statement counts and pg_stat_activity samples)`)
  const run = runSegment({ name, step }, DIAGNOSTIC_SECONDS, pg)
  const [seg, activity] = await Promise.all([run, sampleActivity(pg.url, run, [pg.adminPid])])
  return makeDiagnosis(name, tally, seg, activity)
}
