// The PostgreSQL server that measurements 6 and 7 (bench/measure/claims.ts, crowd.ts) run on: started
// here (scripts/lib/postgres-server.ts) with the booking schema, and a redis-server for the claim gate
// in front of it, both stopped here, also on error; its
// pools; the baseline statement both measure against; and the diagnostics that show where a claim's
// time goes (statements per attempt on the client, pg_stat_activity samples on the server).
import postgres from 'postgres'
import { type PostgresServer, startPostgres } from '../scripts/lib/postgres-server.js'
import { type RedisServer, startRedis } from '../scripts/lib/redis-server.js'
import type { Db, Sql } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { statement, statementNames } from '../src/adapters/postgres/statements.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { connectRedis, type RedisClient, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import type { ClaimGate } from '../src/ports/claim-gate.js'
import { fmtInt, log, sleep } from './lib.js'

/** Connections in every pool the booking measurements open. */
export const POOL = 10

/**
 * The baseline of both: a single-row conditional UPDATE. It has no parameters, so the driver sends it as
 * one simple query (one round trip).
 */
export const CEILING_SQL = 'UPDATE bench_row SET v = v + 1 WHERE id = 1 AND v >= 0'

/** The server and what the measurements need of it, for the length of withBookingDatabase. */
export interface BookingDatabase {
  url: string
  /** The postmaster's pid: its children's CPU time is PostgreSQL's. */
  pid: number
  version: string
  /** One connection for set-up and checks; the diagnostics leave it out by its pid. */
  admin: Db
  adminPid: number
  /** A pool through the production driver (postgresDb), closed by a stop if still open. */
  open(max: number): Db
  /** The same through preparedDb (the what-if). */
  openPrepared(max: number): Db
  close(db: Db): Promise<void>
  /** True once a stop began: the load loops finish their current attempt and stop. */
  stopping(): boolean
  /** A claim gate on the redis-server started with PostgreSQL, connected (its client disconnected by the stop). */
  gate(): Promise<ClaimGate>
  /** That redis-server's URL and pid, for the child processes of measurement 7 and its CPU figures. */
  gateUrl: string
  gatePid: number
}

let server: PostgresServer | undefined
let gateRedis: RedisServer | undefined
const gateClients: RedisClient[] = []
let stopped: Promise<void> | undefined
/** Every pool open on the server, so that a stop closes them before the server goes away. */
const pools = new Set<Db>()
/** Set by a stop: the load loops finish their current attempt and stop. */
let stopping = false

function track<T extends Db>(db: T): T {
  pools.add(db)
  return db
}

async function closePool(db: Db): Promise<void> {
  pools.delete(db)
  await db.close()
}

/**
 * Stops the load, closes the pools, then stops the PostgreSQL server and removes its directory, if it
 * is running (also for run.ts's signal and error paths). Every caller waits for the same stop, so
 * nobody exits the process halfway through. The pools go first: the driver throws from a timer when
 * the server closes a connection that has a write pending.
 */
export function stopBookingServer(): Promise<void> {
  stopping = true
  const s = server
  if (s === undefined) return stopped ?? Promise.resolve()
  server = undefined
  // Stopped early (a signal, an error), the driver's in-flight queries fail, some where nobody awaits
  // them (CONNECTION_CLOSED rejections, a TypeError from a pending write): logged, not fatal, until the
  // server and its directory are gone.
  const stray = (err: unknown) => log(`ignored while stopping PostgreSQL: ${err instanceof Error ? err.message : String(err)}`)
  process.on('unhandledRejection', stray)
  process.on('uncaughtException', stray)
  stopped = (async () => {
    try {
      await Promise.allSettled([...pools].map((db) => closePool(db)))
      for (const c of gateClients.splice(0)) c.disconnect()
      await gateRedis?.stop()
      gateRedis = undefined
      await s.stop()
    } finally {
      process.removeListener('unhandledRejection', stray)
      process.removeListener('uncaughtException', stray)
    }
  })()
  return stopped
}

/**
 * Starts PostgreSQL, applies the migrations, creates the ceiling's one-row table, runs the measurements
 * and stops the server (stopBookingServer), whatever happens.
 */
export async function withBookingDatabase<T>(run: (db: BookingDatabase) => Promise<T>): Promise<T> {
  stopping = false
  try {
    server = await startPostgres()
    const pg = server
    log(`postgres is up on 127.0.0.1:${pg.port} (pid ${pg.pid})`)
    gateRedis = await startRedis()
    const gateUrl = gateRedis.url
    log(`redis-server for the claim gate is up on ${gateUrl} (pid ${gateRedis.pid})`)
    const open = (max: number) => track(postgresDb(pg.url, { max }))
    const admin = open(1)
    await migrate(admin)
    // The diagnostics sample the connections under test only: the admin connection is left out by pid.
    const [{ pid: adminPid } = { pid: 0 }] = await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    const [{ version } = { version: '?' }] = await admin.query<{ version: string }>("SELECT current_setting('server_version') AS version")
    await admin.query('CREATE TABLE bench_row (id int PRIMARY KEY, v int NOT NULL)')
    await admin.query('INSERT INTO bench_row VALUES (1, 0)')
    const result = await run({
      url: pg.url,
      pid: pg.pid,
      version,
      admin,
      adminPid,
      open,
      openPrepared: (max) => track(preparedDb(pg.url, max)),
      close: closePool,
      stopping: () => stopping,
      gateUrl,
      gatePid: gateRedis.pid,
      gate: async () => {
        const client = connectRedis(gateUrl)
        gateClients.push(client)
        if (!(await whenReady(client, 5000))) throw new Error(`the claim gate's redis-server at ${gateUrl} did not answer`)
        return new RedisClaimGate(client, luaScripts())
      },
    })
    await closePool(admin)
    return result
  } finally {
    await stopBookingServer()
  }
}

export function bump(tally: Record<string, number>, key: string, n = 1): void {
  tally[key] = (tally[key] ?? 0) + n
}

// ---------------------------------------------------------------------------------------------------
// Diagnostics: statements per attempt (client side) and what the connections do (server side)

/** SQL text -> the name of its file in src/adapters/postgres/sql. */
const statementByText = new Map(statementNames().map((n) => [statement(n), n]))

/** The name a statement is counted under: its SQL file's, or its first word (BEGIN, COMMIT, ...). */
export function statementName(text: string): string {
  const known = statementByText.get(text)
  if (known !== undefined) return known
  const first = /^--\s*([a-z0-9-]+)\.sql:/.exec(text)?.[1]
  if (first !== undefined) return first
  if (/^set local/i.test(text)) return 'SET LOCAL'
  const word = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase()
  if (word === 'BEGIN' || word === 'COMMIT' || word === 'ROLLBACK') return word
  return text === CEILING_SQL ? 'ceiling UPDATE' : text.slice(0, 30)
}

export interface StatementTally {
  /** statement name -> [count, client-observed ms in total]. */
  statements: Map<string, [number, number]>
  transactions: number
  /** Statements sent outside a transaction: each takes a connection from the pool, as each transaction does. */
  outside: number
  /** Statements with parameters (prepared: one round trip each). */
  withParams: number
  /** Client-observed ms of whole transactions minus the statements inside: pool wait, BEGIN, COMMIT/ROLLBACK. */
  transactionOverheadMs: number
}

export const newTally = (): StatementTally => ({
  statements: new Map(),
  transactions: 0,
  outside: 0,
  withParams: 0,
  transactionOverheadMs: 0,
})

/** A Db that counts and times every statement (client side). For the diagnostic passes only. */
export function countingDb(db: Db, tally: StatementTally): Db {
  const timed = async <T>(
    text: string,
    params: unknown[] | undefined,
    run: () => Promise<T>,
    inTx: { ms: number } | undefined,
  ): Promise<T> => {
    if (params !== undefined && params.length > 0) tally.withParams++
    const t0 = performance.now()
    try {
      return await run()
    } finally {
      const ms = performance.now() - t0
      const name = statementName(text)
      const entry = tally.statements.get(name) ?? [0, 0]
      entry[0]++
      entry[1] += ms
      tally.statements.set(name, entry)
      if (inTx) inTx.ms += ms
      else tally.outside++
    }
  }
  const wrap = (sql: Sql, inTx: { ms: number } | undefined): Sql => ({
    query: <T>(text: string, params?: unknown[]) => timed(text, params, () => sql.query<T>(text, params), inTx),
  })
  return {
    ...wrap(db, undefined),
    async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
      const inside = { ms: 0 }
      const t0 = performance.now()
      try {
        return await db.transaction((tx) => fn(wrap(tx, inside)))
      } finally {
        tally.transactions++
        tally.transactionOverheadMs += performance.now() - t0 - inside.ms
      }
    },
    close: () => db.close(),
  }
}

const BUCKETS = [
  'running',
  'lock wait',
  'waiting for the client inside a transaction',
  'waiting for the client mid-statement',
  'idle (no statement sent)',
] as const
type Bucket = (typeof BUCKETS)[number]

export interface Activity {
  samples: number
  /** `${bucket}\t${statement}` -> connection-samples */
  states: Record<string, number>
}

/**
 * Samples pg_stat_activity every few ms until `done` settles: for every client connection but the
 * sampler's own, what it is doing and in (or after) which statement. "Waiting for the client" is
 * PostgreSQL waiting for the next message from the driver: idle in transaction (between the
 * statements of a transaction, its row locks held), or ClientRead while active (inside one
 * extended-protocol exchange).
 */
export async function sampleActivity(url: string, done: Promise<unknown>, exclude: number[]): Promise<Activity> {
  const sampler = track(postgresDb(url, { max: 1 }))
  const states: Record<string, number> = {}
  let samples = 0
  let finished = false
  const finish = () => {
    finished = true
  }
  done.then(finish, finish)
  try {
    while (!finished) {
      const rows = await sampler.query<{ state: string | null; wt: string; query: string }>(
        `SELECT state, coalesce(wait_event_type, '') AS wt, query
         FROM pg_stat_activity
         WHERE datname = current_database() AND backend_type = 'client backend'
           AND pid <> pg_backend_pid() AND pid <> ALL ($1::int[])`,
        [exclude],
      )
      samples++
      for (const r of rows) {
        let bucket: Bucket
        if (r.state === 'idle') bucket = 'idle (no statement sent)'
        else if (r.state === 'idle in transaction') bucket = 'waiting for the client inside a transaction'
        else if (r.wt === 'Lock') bucket = 'lock wait'
        else if (r.wt === 'Client') bucket = 'waiting for the client mid-statement'
        else bucket = 'running'
        bump(states, `${bucket}\t${bucket === 'idle (no statement sent)' ? '' : statementName(r.query)}`)
      }
      await sleep(3)
    }
  } finally {
    await closePool(sampler)
  }
  return { samples, states }
}

export interface Diagnosis {
  name: string
  attempts: number
  perSecond: number
  outcomes: Record<string, number>
  statementsPerAttempt: number
  /** Round trips per attempt through postgresDb: statements + those with parameters again + BEGIN and COMMIT/ROLLBACK. */
  roundTripsPerAttempt: number
  /** The same if statements were prepared (one round trip each). */
  roundTripsPreparedPerAttempt: number
  /** Connections taken from the pool per attempt: statements outside a transaction + transactions. */
  poolCheckoutsPerAttempt: number
  byStatement: Record<string, { perAttempt: number; meanMs: number }>
  transactionOverheadMsPerTransaction: number
  /** Share of the sampled connections' time in each bucket, and per statement within each bucket. */
  connectionTime: Record<string, number>
  connectionTimeByStatement: Record<string, number>
}

export function makeDiagnosis(
  name: string,
  tally: StatementTally,
  seg: { attempts: number; seconds: number; outcomes: Record<string, number> },
  activity: Activity,
): Diagnosis {
  const statements = [...tally.statements.values()].reduce((s, [n]) => s + n, 0)
  const total = Object.values(activity.states).reduce((s, v) => s + v, 0) || 1
  const connectionTime: Record<string, number> = Object.fromEntries(BUCKETS.map((b) => [b, 0]))
  const byStatement: Record<string, number> = {}
  for (const [key, n] of Object.entries(activity.states).sort((a, b) => b[1] - a[1])) {
    const [bucket = '', stmt = ''] = key.split('\t')
    bump(connectionTime, bucket, n / total)
    byStatement[stmt === '' ? bucket : `${bucket}: ${stmt}`] = n / total
  }
  return {
    name,
    attempts: seg.attempts,
    perSecond: seg.attempts / seg.seconds,
    outcomes: seg.outcomes,
    statementsPerAttempt: statements / seg.attempts,
    // Production prepares every statement: one round trip each, plus BEGIN and COMMIT/ROLLBACK.
    roundTripsPerAttempt: (statements + 2 * tally.transactions) / seg.attempts,
    roundTripsPreparedPerAttempt: (statements + 2 * tally.transactions) / seg.attempts,
    poolCheckoutsPerAttempt: (tally.outside + tally.transactions) / seg.attempts,
    byStatement: Object.fromEntries([...tally.statements].map(([k, [n, ms]]) => [k, { perAttempt: n / seg.attempts, meanMs: ms / n }])),
    transactionOverheadMsPerTransaction: tally.transactions > 0 ? tally.transactionOverheadMs / tally.transactions : 0,
    connectionTime,
    connectionTimeByStatement: byStatement,
  }
}

export function describeDiagnosis(d: Diagnosis, unit: string): string {
  const pct = (v: number) => `${(v * 100).toFixed(0)}%`
  const buckets = Object.entries(d.connectionTime)
    .map(([k, v]) => `${k} ${pct(v)}`)
    .join(', ')
  const locks = Object.entries(d.connectionTimeByStatement)
    .filter(([k, v]) => k.startsWith('lock wait') && v >= 0.005)
    .map(([k, v]) => `${k.slice('lock wait: '.length)} ${pct(v)}`)
    .join(', ')
  const stmts = Object.entries(d.byStatement)
    .sort((a, b) => b[1].perAttempt * b[1].meanMs - a[1].perAttempt * a[1].meanMs)
    .map(([k, v]) => `${k} ×${v.perAttempt.toFixed(2)} ${v.meanMs.toFixed(1)} ms`)
    .join(', ')
  return (
    `${d.name}: ${fmtInt(d.perSecond)} ${unit}/s with counting on, outcomes ${JSON.stringify(d.outcomes)}.\n` +
    `    per ${unit}: ${d.statementsPerAttempt.toFixed(1)} statements; ${d.roundTripsPerAttempt.toFixed(1)} round trips with BEGIN and COMMIT/ROLLBACK ` +
    '(statements prepared); ' +
    `${d.poolCheckoutsPerAttempt.toFixed(1)} pool checkouts.\n` +
    `    client-observed (count per ${unit}, mean incl. pool wait outside transactions): ${stmts}; ` +
    `pool wait + BEGIN + COMMIT/ROLLBACK ${d.transactionOverheadMsPerTransaction.toFixed(1)} ms per transaction.\n` +
    `    the ${POOL} connections' time: ${buckets}${locks ? ` (lock waits in: ${locks})` : ''}.`
  )
}

/**
 * What-if: one pool with `{ prepare: true }` on every unsafe() call and the driver's sql.begin() for
 * transactions: the single-pool design that raised UNSAFE_TRANSACTION under load (a BEGIN pipelined
 * past the driver's reservation). Production (postgresDb) prepares every statement as well, with
 * transactions on connections of their own; this is kept as a comparison.
 */
function preparedDb(url: string, max: number): Db {
  type Params = Parameters<postgres.Sql['unsafe']>[1]
  const client = postgres(url, { max, onnotice: () => {}, prepare: true })
  const wrap = (run: postgres.Sql | postgres.TransactionSql): Sql => ({
    async query<T>(text: string, params: unknown[] = []) {
      return (await run.unsafe(text, params as Params, { prepare: true })) as unknown as T[]
    },
  })
  return {
    ...wrap(client),
    async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
      return (await client.begin((tx) => fn(wrap(tx)))) as T
    },
    async close() {
      await client.end({ timeout: 5 })
    },
  }
}

export async function deadlocks(admin: Db): Promise<number> {
  const [r] = await admin.query<{ n: string | number }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()')
  return Number(r?.n ?? 0)
}
